"""Agent projection: evidence blocks -> the list the agent's tool returns.

Deduplicates by the chunk-scoped evidence key only, never by `source`: two chunks of one document are
two items. `document_id` is the evidence key, so the model cites chunks, not files. Budgets cap the
number of items, the characters per item and the characters in total; a cut is marked in the text.
Everything the budgets leave out is reported, like every other drop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..phrases import Phrase, english
from ..records import Candidate, Projected

MIN_USEFUL_CHARS = 40  # below this, a truncated tail is noise: leave the item out instead


@dataclass(frozen=True)
class Budgets:
    max_items: int = 5
    max_chars_per_item: int = 1500
    max_total_chars: int = 8000


@dataclass(frozen=True)
class Projection:
    items: tuple[Projected, ...]
    left_out: tuple[tuple[str, str], ...]  # (evidence key, reason)
    reasons: tuple[Phrase, ...] = ()  # each left-out block's reason as a phrase (the reason is its English)


def _cut(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    marker = f" …[truncated {len(text) - limit} chars]"
    return text[: max(0, limit - len(marker))].rstrip() + marker, True


def project(evidence: Sequence[Candidate], budgets: Budgets) -> Projection:
    items: list[Projected] = []
    left_out: list[tuple[str, Phrase]] = []
    seen: set[str] = set()
    used = 0
    for block in evidence:
        key = block.evidence_key
        if key in seen:
            left_out.append((key, Phrase("projection.duplicate")))
            continue
        seen.add(key)
        if len(items) >= budgets.max_items:
            left_out.append((key, Phrase("projection.max_items", {"max_items": budgets.max_items})))
            continue
        room = min(budgets.max_chars_per_item, budgets.max_total_chars - used)
        if room < min(MIN_USEFUL_CHARS, len(block.content)):
            left_out.append((key, Phrase("projection.total_chars", {"max_total_chars": budgets.max_total_chars})))
            continue
        content, truncated = _cut(block.content, room)
        used += len(content)
        items.append(Projected(document_id=key, source=block.source, content=content,
                               score=round(block.score, 6), truncated=truncated,
                               location=str(block.metadata.get("location") or "")))
    return Projection(items=tuple(items), left_out=tuple((k, english(r)) for k, r in left_out),
                      reasons=tuple(r for _, r in left_out))

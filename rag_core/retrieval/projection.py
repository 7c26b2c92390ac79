"""Agent projection: evidence blocks -> the list the agent's tool returns.

Deduplicates by the block's evidence key only, never by `source`: two chunks of one document are
two items (unless the merge stage made them one block, whose key names both). `document_id` is the
block's key, so the model cites chunks, not files. Budgets cut in this order, each cut marked in the
text and everything left out reported like every other drop:

1. how far a block grows: `rag.block-tokens` (the expansion stage stops growing it there);
2. the number of items: `max_items`;
3. each item: at most `max_tokens_per_item` tokens per hit it holds (rag.block-tokens) and
   `max_chars_per_item` characters per chunk it holds; a cut keeps the text from the block's best hit's chunk on
   ("… " before it) when a cut from the start would not keep that chunk whole;
4. all items together: `max_total_tokens` (rag.context-tokens) and `max_total_chars`.

Tokens are counted with `tokens.TOKENIZER`, which every projection names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..identity import key_range
from ..phrases import Phrase, english
from ..records import Block, Projected
from ..tokens import TOKENIZER, count_tokens, truncate

MIN_USEFUL_CHARS = 40  # below this, a truncated tail is noise: leave the item out instead
MIN_USEFUL_TOKENS = 12
_MARKER_TOKENS = 12  # what " …[truncated N tokens]" takes


@dataclass(frozen=True)
class Budgets:
    max_items: int = 5
    max_chars_per_item: int = 1500
    max_total_chars: int = 8000
    max_tokens_per_item: int = 1000  # per hit a block holds (rag.block-tokens)
    max_total_tokens: int = 6000  # rag.context-tokens


@dataclass(frozen=True)
class Projection:
    items: tuple[Projected, ...]
    left_out: tuple[tuple[str, str], ...]  # (evidence key, reason)
    reasons: tuple[Phrase, ...] = ()  # each left-out block's reason as a phrase (the reason is its English)
    tokens: int = 0  # the items' tokens
    tokenizer: str = TOKENIZER

    def to_dict(self) -> dict[str, object]:
        return {"tokens": self.tokens, "tokenizer": self.tokenizer}


def _cut_chars(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    marker = f" …[truncated {len(text) - limit} chars]"
    return text[: max(0, limit - len(marker))].rstrip() + marker


def _cut_tokens(text: str, limit: int) -> str:
    total = count_tokens(text)
    if total <= limit:
        return text
    kept, n = truncate(text, max(0, limit - _MARKER_TOKENS))
    return kept.rstrip() + f" …[truncated {total - n} tokens]"


def _best(block: Block) -> tuple[int, int] | None:
    """Where the block's best hit's chunk is in its text (its highlight), None when unknown."""
    ranges = [key_range(k) for k in block.matched]
    indexes = sorted({r[1] for r in ranges if r is not None})
    best = ranges[0][1] if ranges and ranges[0] is not None else None
    if best is None or len(indexes) != len(block.highlights) or best not in indexes:
        return None
    return block.highlights[indexes.index(best)]


def _focused(block: Block, room_chars: int, room_tokens: int) -> str:
    """The block's text for a cut: from its best hit's chunk on ("… " before it) when a cut from the start would not
    keep that chunk whole, so a budget never cuts away the text the block was found by."""
    best = _best(block)
    if best is None or best[0] == 0:
        return block.content
    if best[1] <= room_chars and count_tokens(block.content[:best[1]]) <= room_tokens - _MARKER_TOKENS:
        return block.content
    return "… " + block.content[best[0]:]


def _chunks(block: Block) -> int:
    return block.last - block.first + 1 if block.first is not None and block.last is not None else 1


def project(blocks: Sequence[Block], budgets: Budgets) -> Projection:
    items: list[Projected] = []
    left_out: list[tuple[str, Phrase]] = []
    seen: set[str] = set()
    chars = tokens = 0
    for block in blocks:
        key = block.key
        if key in seen:
            left_out.append((key, Phrase("projection.duplicate")))
            continue
        seen.add(key)
        if len(items) >= budgets.max_items:
            left_out.append((key, Phrase("projection.max_items", {"max_items": budgets.max_items})))
            continue
        room_chars = min(budgets.max_chars_per_item * _chunks(block), budgets.max_total_chars - chars)
        total_room = budgets.max_total_tokens - tokens
        room_tokens = min(budgets.max_tokens_per_item * len(block.matched), total_room)
        if block.tokens > total_room and total_room < MIN_USEFUL_TOKENS + _MARKER_TOKENS:  # no room for text and mark
            left_out.append((key, Phrase("projection.total_tokens", {"max_total_tokens": budgets.max_total_tokens})))
            continue
        if room_chars < min(MIN_USEFUL_CHARS, len(block.content)):
            left_out.append((key, Phrase("projection.total_chars", {"max_total_chars": budgets.max_total_chars})))
            continue
        content = block.content
        if len(content) > room_chars or block.tokens > room_tokens:
            content = _cut_tokens(_cut_chars(_focused(block, room_chars, room_tokens), room_chars), room_tokens)
        truncated = content != block.content
        used = count_tokens(content) if truncated else block.tokens
        chars += len(content)
        tokens += used
        hit = block.hit
        items.append(Projected(document_id=key, source=block.source, content=content, score=round(hit.score, 6),
                               truncated=truncated, location=str(hit.metadata.get("location") or ""),
                               matched=block.matched if len(block.matched) > 1 else (),
                               section=block.section if block.grown else "", tokens=used,
                               url=str(hit.metadata.get("sourceUrl") or "")))
    return Projection(items=tuple(items), left_out=tuple((k, english(r)) for k, r in left_out),
                      reasons=tuple(r for _, r in left_out), tokens=tokens)

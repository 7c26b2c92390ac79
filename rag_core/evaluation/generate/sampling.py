"""Which chunks a test set is made from: read through the ChunkStore port, sampled over documents, seeded.

Every document's active chunks are read once (`read_chunks`). A chunk can be asked about when it holds at
least one quotable sentence (`quotable_sentences`: prose or a list item that is in the chunk verbatim, not a
heading, a code block or a table rule), so its answer can be quoted.

The order (`sample_order`) takes documents round-robin: documents are shuffled, each one's chunks are
shuffled (each with its own seeded generator, so one document's order does not depend on the others), and the
first round takes one chunk of every document, the second a second one, and so on, for at most
`per_doc_max` rounds. So no document takes more than its share: at any point the numbers of chunks taken
from two documents differ by at most one, unless one of them has no chunk left. A generator walks the
order until it has kept enough items: a chunk whose item is rejected is followed by the next in the order.
The same seed and the same knowledge base give the same order.

Follow-up items (a share of the set, `follow_up_count`) take evenly spread places in it (`follow_up_slot`): the
chunk that comes to such a place gives a first question and a follow-up instead of one question.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from ...agent.offline import sentences
from ...errors import EvaluationError
from ...identity import evidence_key
from ...languages import CJK, language_of
from ...ports import ChunkStore

LANGS = ("auto", "zh", "en")  # --lang: the chunk's own language, or one forced


@dataclass(frozen=True)
class SampledChunk:
    """A chunk as the generators see it."""

    doc_id: str
    chunk_index: int
    content: str
    heading_path: tuple[str, ...]  # outermost first, as ingest recorded it

    @property
    def evidence_key(self) -> str:
        return evidence_key(self.doc_id, self.chunk_index, None, self.content)

    @cached_property
    def lang(self) -> str:
        """The language of its prose: code blocks and tables (identifiers, YAML) do not make a Chinese chunk English."""
        prose = " ".join([*self.heading_path, *quotable_sentences(self.content)]) or self.content
        return "zh" if language_of(prose) == CJK else "en"


def quotable_sentences(content: str) -> list[str]:
    """The chunk's sentences that appear in it verbatim (table rows, which `sentences` re-joins, do not)."""
    return [s for s in sentences(content) if s in content]


def where(kb_name: str) -> str:
    return f"the knowledge base {kb_name!r}" if kb_name else "the knowledge base"


def read_chunks(store: ChunkStore, kb_name: str = "",
                progress: Callable[[int, int], None] | None = None) -> dict[str, list[SampledChunk]]:
    """doc_id -> its chunks in chunk order, for every indexed document (sorted by doc_id). An empty
    knowledge base is an error: there is nothing to ask about."""
    documents = store.list_documents()
    if not documents:
        raise EvaluationError(f"{where(kb_name).capitalize()} is empty: ingest documents first (Knowledge base page, "
                              f"or `python -m rag_core{' --kb ' + kb_name if kb_name else ''} ingest PATH`).")
    out: dict[str, list[SampledChunk]] = {}
    for n, doc in enumerate(documents, start=1):
        out[doc.doc_id] = [SampledChunk(c.doc_id, c.chunk_index, c.content, _heading_path(c.metadata, c.title))
                           for c in store.get_chunks(doc.doc_id)]
        if progress is not None:
            progress(n, len(documents))
    return out


def _heading_path(metadata: Mapping[str, object], title: str) -> tuple[str, ...]:
    text = str((metadata or {}).get("headingPath") or title or "").strip()
    return tuple(part.strip() for part in text.split(" > ") if part.strip())


def sample_order(chunks: Mapping[str, Sequence[SampledChunk]], seed: int,
                 per_doc_max: int | None = None) -> list[SampledChunk]:
    """Every chunk given, at most `per_doc_max` per document, in the round-robin order of the module docstring."""
    if per_doc_max is not None and per_doc_max < 1:
        raise EvaluationError(f"--per-doc-max must be at least 1 (got {per_doc_max}).")
    doc_ids = sorted(d for d, cs in chunks.items() if cs)
    random.Random(f"docs:{seed}").shuffle(doc_ids)
    shuffled = {}
    for doc_id in doc_ids:
        own = list(chunks[doc_id])
        random.Random(f"chunks:{seed}:{doc_id}").shuffle(own)
        shuffled[doc_id] = own[:per_doc_max] if per_doc_max is not None else own
    rounds = max((len(cs) for cs in shuffled.values()), default=0)
    return [shuffled[d][r] for r in range(rounds) for d in doc_ids if r < len(shuffled[d])]


def check_size(size: int, order: Sequence[SampledChunk], documents: int, per_doc_max: int | None,
               kb_name: str = "", needed: int | None = None) -> None:
    """One clear line when `size` is not a positive number or the order cannot give `needed` (default `size`)
    items, one per chunk."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise EvaluationError(f"--size must be a whole number of at least 1 (got {size!r}).")
    needed = size if needed is None else needed
    if len(order) >= needed:
        return
    cap = f", at most {per_doc_max} per document (--per-doc-max)" if per_doc_max is not None else ""
    hint = " or raise --per-doc-max" if per_doc_max is not None else ""
    raise EvaluationError(f"{where(kb_name).capitalize()} can give at most {len(order)} item"
                          f"{'s' if len(order) != 1 else ''} ({documents} documents with {len(order)} chunks that "
                          f"hold a sentence to quote{cap}): ask for --size {len(order) + size - needed} or "
                          f"fewer{hint}.")


def follow_up_count(size: int, share: float, answerable: int | None = None) -> int:
    """How many of `size` items are follow-ups for a `share` (--follow-up-share); they are made of the `answerable`
    items (default all). One clear line when the share is not in [0, 1] or asks for more than there are."""
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0.0 <= share <= 1.0:
        raise EvaluationError(f"--follow-up-share must lie in [0, 1] (got {share!r}).")
    wanted = round(size * share) if isinstance(size, int) and size > 0 else 0
    answerable = size if answerable is None else answerable
    if wanted > answerable:
        raise EvaluationError(f"--follow-up-share {share:g} asks for {wanted} follow-ups, but only {answerable} of "
                              f"the {size} items can be answered (the others should not be): lower either share.")
    return wanted


def follow_up_slot(n: int, slots: int, wanted: int) -> bool:
    """Whether item `n` (from 0) of `slots` is a follow-up, the `wanted` follow-ups spread evenly over them (for 3
    of 12: items 4, 8 and 12). A slot whose follow-up is rejected is tried again on the next chunk."""
    return slots > 0 and (n + 1) * wanted // slots > n * wanted // slots

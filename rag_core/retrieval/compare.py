"""Two lookups side by side (the retrieval debugger's compare mode): which evidence both found and which only
one of them did, chunk by chunk and document by document, and how long each took.

Chunks are matched by evidence key when both sides chunk documents alike (one knowledge base with two parameter
sets, or two with the same chunking): the same key then names the same text. Two knowledge bases chunked
differently give the same key to different text, so there (`by_text`) a chunk counts as found by both when the
other side's evidence holds a chunk of the same document whose text overlaps at least half of the shorter of
the two (character offsets from the chunks' metadata; a chunk without offsets falls back to its key). `matches`
says which chunks of the other side each one was matched with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..records import BOTH, ONLY_A, ONLY_B, Candidate
from .retriever import LookupResult

MIN_SHARED = 0.5  # by text: the overlap needed, as a fraction of the shorter chunk


@dataclass(frozen=True)
class ComparedBlock:
    """One evidence block of one side, marked."""

    position: int  # 1-based place in its side's evidence list
    evidence_key: str
    doc_id: str | None
    score: float
    content: str
    mark: str  # chunk level: BOTH, or ONLY_A / ONLY_B (the side it is on)
    doc_mark: str  # document level: BOTH when the other side's evidence has any chunk of its document
    matches: tuple[str, ...] = ()  # the other side's evidence keys counted as the same chunk


@dataclass(frozen=True)
class LookupComparison:
    a: tuple[ComparedBlock, ...]
    b: tuple[ComparedBlock, ...]
    by_text: bool  # chunks matched by overlapping text (different chunking), else by evidence key
    docs_both: tuple[str, ...]
    docs_only_a: tuple[str, ...]
    docs_only_b: tuple[str, ...]
    a_ms: float | None = None  # each lookup's total time (LookupResult.timings["total"])
    b_ms: float | None = None

    def count(self, side: str, mark: str) -> int:
        """How many of side "A" or "B"'s evidence blocks carry `mark` (BOTH, or that side's only-mark)."""
        return sum(block.mark == mark for block in (self.a if side == "A" else self.b))

    def summary(self) -> dict[str, int]:
        """The counts shown above the two lists. By key, "chunks_both" is the same on both sides; by text one
        chunk may match several, so each side's count is given."""
        return {"chunks_both_a": self.count("A", BOTH), "chunks_both_b": self.count("B", BOTH),
                "chunks_only_a": self.count("A", ONLY_A), "chunks_only_b": self.count("B", ONLY_B),
                "docs_both": len(self.docs_both), "docs_only_a": len(self.docs_only_a),
                "docs_only_b": len(self.docs_only_b)}

    def to_dict(self) -> dict[str, Any]:
        def blocks(side: tuple[ComparedBlock, ...]) -> list[dict[str, Any]]:
            return [{"position": x.position, "evidence_key": x.evidence_key, "doc_id": x.doc_id, "score": x.score,
                     "mark": x.mark, "doc_mark": x.doc_mark, "matches": list(x.matches)} for x in side]

        return {"by_text": self.by_text, "summary": self.summary(), "a": blocks(self.a), "b": blocks(self.b),
                "docs_both": list(self.docs_both), "docs_only_a": list(self.docs_only_a),
                "docs_only_b": list(self.docs_only_b), "a_ms": self.a_ms, "b_ms": self.b_ms}


def _span(c: Candidate) -> tuple[int, int] | None:
    start, end = c.metadata.get("start"), c.metadata.get("end")
    if isinstance(start, int) and isinstance(end, int) and end > start:
        return start, end
    return None


def _same_chunk(x: Candidate, y: Candidate, by_text: bool) -> bool:
    if not by_text or x.doc_id is None or x.doc_id != y.doc_id:
        return x.evidence_key == y.evidence_key
    sx, sy = _span(x), _span(y)
    if sx is None or sy is None:
        return x.evidence_key == y.evidence_key
    shared = min(sx[1], sy[1]) - max(sx[0], sy[0])
    return shared > 0 and shared >= MIN_SHARED * min(sx[1] - sx[0], sy[1] - sy[0])


def compare_evidence(a: Sequence[Candidate], b: Sequence[Candidate], *, by_text: bool = False,
                     a_ms: float | None = None, b_ms: float | None = None) -> LookupComparison:
    """Side A's evidence against side B's (each in its own order). `by_text`: the sides chunk documents
    differently (see the module docstring)."""
    docs_a = {c.doc_id for c in a if c.doc_id is not None}
    docs_b = {c.doc_id for c in b if c.doc_id is not None}

    def marked(side: Sequence[Candidate], other: Sequence[Candidate], only: str,
               other_docs: set[str]) -> tuple[ComparedBlock, ...]:
        out = []
        for position, c in enumerate(side, start=1):
            matches = tuple(o.evidence_key for o in other if _same_chunk(c, o, by_text))
            out.append(ComparedBlock(position, c.evidence_key, c.doc_id, c.score, c.content,
                                     BOTH if matches else only, BOTH if c.doc_id in other_docs else only, matches))
        return tuple(out)

    def ordered(docs: set[str], side: Sequence[Candidate]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.doc_id for c in side if c.doc_id in docs))

    return LookupComparison(marked(a, b, ONLY_A, docs_b), marked(b, a, ONLY_B, docs_a), by_text,
                            ordered(docs_a & docs_b, a), ordered(docs_a - docs_b, a), ordered(docs_b - docs_a, b),
                            a_ms, b_ms)


def compare_lookups(a: LookupResult, b: LookupResult, *, by_text: bool = False) -> LookupComparison:
    """Two lookups' evidence compared (`compare_evidence`), with each one's total time."""
    return compare_evidence(a.evidence, b.evidence, by_text=by_text, a_ms=a.timings.get("total"),
                            b_ms=b.timings.get("total"))

"""Two chunkings of one text side by side (the chunk preview's compare mode), aligned by character offset.

A boundary is an offset where a chunk starts or ends. The text is cut at every boundary of either chunking
into rows; each row says which chunks of A and of B cover it (two of one side: that side's overlap) and which
boundaries fall at its start, marked "both" when both chunkings cut there and "only A" / "only B" otherwise.
Reading the rows top to bottom shows where the two configurations agree and where one cuts and the other
does not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .records import BOTH, ONLY_A, ONLY_B, Chunk


@dataclass(frozen=True)
class Boundary:
    offset: int
    a_starts: tuple[int, ...] = ()  # chunk indexes of A starting here
    a_ends: tuple[int, ...] = ()  # ... and ending here
    b_starts: tuple[int, ...] = ()
    b_ends: tuple[int, ...] = ()

    @property
    def mark(self) -> str:
        in_a, in_b = bool(self.a_starts or self.a_ends), bool(self.b_starts or self.b_ends)
        return BOTH if in_a and in_b else ONLY_A if in_a else ONLY_B


@dataclass(frozen=True)
class AlignedRow:
    """text[start:end]: no boundary of either chunking inside it."""

    start: int
    end: int
    a_chunks: tuple[int, ...]  # A's chunks covering it (two: A's overlap)
    b_chunks: tuple[int, ...]
    boundary: Boundary | None  # the boundary at `start` (None: the text's start, when no chunk starts there)


@dataclass(frozen=True)
class ChunkingComparison:
    length: int  # of the text
    a: tuple[Chunk, ...]
    b: tuple[Chunk, ...]
    boundaries: tuple[Boundary, ...]  # every offset where a chunk of either starts or ends, in order
    rows: tuple[AlignedRow, ...]

    def counts(self) -> dict[str, int]:
        """Boundaries inside the text (not its two edges, where every chunking starts and ends) by mark."""
        inner = [b.mark for b in self.boundaries if 0 < b.offset < self.length]
        return {BOTH: inner.count(BOTH), ONLY_A: inner.count(ONLY_A), ONLY_B: inner.count(ONLY_B)}

    def to_dict(self) -> dict[str, Any]:
        return {"length": self.length, "chunks": {"a": len(self.a), "b": len(self.b)}, "counts": self.counts(),
                "boundaries": [{"offset": b.offset, "mark": b.mark, "a_starts": list(b.a_starts),
                                "a_ends": list(b.a_ends), "b_starts": list(b.b_starts), "b_ends": list(b.b_ends)}
                               for b in self.boundaries]}


def compare_chunkings(text: str, a: Sequence[Chunk], b: Sequence[Chunk]) -> ChunkingComparison:
    """Align chunkings `a` and `b` of `text` (each chunk an exact slice: `text[c.start:c.end] == c.text`)."""
    def at(chunks: Sequence[Chunk], offset: int, edge: str) -> tuple[int, ...]:
        return tuple(c.chunk_index for c in chunks if getattr(c, edge) == offset)

    offsets = sorted({c.start for c in (*a, *b)} | {c.end for c in (*a, *b)})
    boundaries = tuple(Boundary(o, at(a, o, "start"), at(a, o, "end"), at(b, o, "start"), at(b, o, "end"))
                       for o in offsets)
    by_offset = {x.offset: x for x in boundaries}
    cuts = sorted({0, len(text), *offsets})
    rows = []
    for start, end in zip(cuts, cuts[1:]):
        if start >= len(text):
            break
        rows.append(AlignedRow(start, end, tuple(c.chunk_index for c in a if c.start <= start and c.end >= end),
                               tuple(c.chunk_index for c in b if c.start <= start and c.end >= end),
                               by_offset.get(start)))
    return ChunkingComparison(len(text), tuple(a), tuple(b), boundaries, tuple(rows))

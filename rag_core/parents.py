"""Parent sections: the heading section a chunk belongs to, bounded in characters (`chunk.parent-max-size`).

A pure function of a document's chunks as they are stored (their offsets, heading paths and pages), so it is read
at lookup time: every knowledge base has parents without re-indexing, the limit can change at any time, and an
edited chunk's parent shows the edit (retrieval/expand.py stitches the section from the rows as they are now).

The rule, for a chunk with heading path P:

1. its section: the run of chunks around it whose heading path starts with P (its heading and the sub-sections
   under it); when that fits the limit (from the first chunk's start to the last one's end), that is its parent;
2. else its own part: the run of chunks around it whose heading path is exactly P (the text under its heading,
   without the sub-sections, each of which is its own chunks' parent by 1); when that fits, that is its parent;
3. else that part is cut into windows of whole chunks, each at most the limit, greedily from its start, cutting at
   a page (slide) change in the window's latter half where there is one; its window is its parent.

A chunk longer than the limit by itself is its own parent, and so is a chunk without offsets (an added chunk).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ChunkSpan:
    """What parents are made of: a chunk's index, its place in the document ([start, end); None: unknown), its
    heading path, and its first page or slide (None: the document has none)."""

    index: int
    start: int | None
    end: int | None
    path: tuple[str, ...] = ()
    place: int | None = None

    @property
    def located(self) -> bool:
        return self.start is not None and self.end is not None


def _run(spans: Sequence[ChunkSpan], at: int, member: Callable[[ChunkSpan], bool]) -> tuple[int, int]:
    """The positions [lo, hi] of the contiguous run around `at` of located spans that `member` accepts."""
    lo = hi = at
    while lo > 0 and spans[lo - 1].located and member(spans[lo - 1]):
        lo -= 1
    while hi + 1 < len(spans) and spans[hi + 1].located and member(spans[hi + 1]):
        hi += 1
    return lo, hi


def _size(spans: Sequence[ChunkSpan], lo: int, hi: int) -> int:
    return int(spans[hi].end) - int(spans[lo].start)  # type: ignore[arg-type]


def _window(spans: Sequence[ChunkSpan], lo: int, hi: int, at: int, max_size: int) -> tuple[int, int]:
    """The window of `spans[lo..hi]` (packed as rule 3 says) that holds position `at`."""
    first = lo
    while True:
        last = first
        while last + 1 <= hi and _size(spans, first, last + 1) <= max_size:
            last += 1
        if last < hi:  # a page change in the latter half of the window is a better cut
            half = spans[first].start + max_size // 2  # type: ignore[operator]
            for cut in range(last, first, -1):
                if spans[cut].start < half:  # type: ignore[operator]
                    break
                if spans[cut].place is not None and spans[cut].place != spans[cut - 1].place:
                    last = cut - 1
                    break
        if at <= last or last >= hi:
            return first, last
        first = last + 1


def parent_range(spans: Sequence[ChunkSpan], at: int, max_size: int) -> tuple[int, int]:
    """The positions [first, last] in `spans` (a document's chunks in order) of the parent of the chunk at position
    `at`, by the module's rule."""
    me = spans[at]
    if not me.located:
        return at, at
    path = me.path
    lo, hi = _run(spans, at, lambda s: s.path[:len(path)] == path)
    if _size(spans, lo, hi) <= max_size or lo == hi:
        return lo, hi
    lo, hi = _run(spans, at, lambda s: s.path == path)
    if _size(spans, lo, hi) <= max_size or lo == hi:
        return lo, hi
    return _window(spans, lo, hi, at, max_size)

"""The expansion stage's work: each evidence hit becomes a block, grown to its parent section (rag_core/parents.py)
or to its neighbouring chunks, within `rag.block-tokens`.

A block grows from its hit's chunk, one chunk at a time, after then before, while the next chunk is in what it
grows to (its parent; N chunks each side) and the block stays within its token budget (`stopped`:
"block_tokens"). It never grows across a chunk that is left out of lookups (`stopped`: "disabled") or into an
added chunk, which has no place in the document's text ("added"). A hit whose chunk is not in the document's rows
as read now (the document was re-indexed since the search) is not grown ("changed"); a port that cannot give a
document's chunks grows none ("unavailable", and the lookup warns).

A block's text is its chunks stitched in order: the overlap a chunk repeats from the one before is given once,
an edited chunk's text is given as edited (with a blank line around it: its text no longer continues the
document's), and the whitespace between two chunks (which the rows do not hold) is given by its length: none, one
space (a line break before a heading line), or a blank line for two characters or more. So stitching unedited
chunks gives the document's text exactly where that whitespace is "", " ", a blank line or a line break before a
heading, and otherwise the same text with other whitespace between two chunks (tests/test_parents.py).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from ..identity import block_key
from ..parents import ChunkSpan, parent_range
from ..records import Block, Candidate, StoredChunk
from ..tokens import count_tokens

EXPAND_MODES = ("none", "neighbours", "parent")
_HEADING_LINE = re.compile(r" {0,3}#{1,6}[^\S\n]")  # as chunking's headings start


@dataclass(frozen=True)
class ExpandParams:
    """The expansion and merge stages' options: `mode` (rag.expand), `neighbours` (rag.expand-neighbours),
    `parent_max_size` (chunk.parent-max-size), `merge` (rag.merge)."""

    mode: str = "none"
    neighbours: int = 1
    parent_max_size: int = 4000
    merge: bool = True


def _located(chunk: StoredChunk) -> bool:
    meta = chunk.metadata
    return isinstance(meta.get("start"), int) and isinstance(meta.get("end"), int) and not meta.get("added")


def _path(chunk: StoredChunk) -> tuple[str, ...]:
    text = str(chunk.metadata.get("headingPath") or "")
    return tuple(text.split(" > ")) if text else ()


def _place(chunk: StoredChunk) -> int | None:
    span = chunk.metadata.get("locationSpan")
    return span.get("first") if isinstance(span, dict) else None


@dataclass
class Rows:
    """One document's chunks as a lookup may show them (disabled ones left out), in chunk order, with the tokens of
    their runs counted once."""

    chunks: Sequence[StoredChunk]
    at: dict[int, int] = field(init=False)
    _tokens: dict[tuple[int, int], int] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.chunks = sorted(self.chunks, key=lambda c: c.chunk_index)
        self.at = {c.chunk_index: i for i, c in enumerate(self.chunks)}

    def tokens(self, lo: int, hi: int) -> int:
        """The tokens of positions lo..hi stitched into one text (what a block of them holds: the separators
        between chunks are tokens too, and an overlap is counted once)."""
        if (lo, hi) not in self._tokens:
            self._tokens[(lo, hi)] = count_tokens(stitch(self.chunks[lo:hi + 1], ())[0])
        return self._tokens[(lo, hi)]

    def follows(self, pos: int, nxt: int) -> str:
        """"" when the chunk at `nxt` continues the one at `pos` in the document (consecutive indexes, both with
        offsets); else why a block may not grow into it ("disabled": a chunk between is left out; "added")."""
        a, b = self.chunks[min(pos, nxt)], self.chunks[max(pos, nxt)]
        if b.chunk_index != a.chunk_index + 1:
            return "disabled"
        return "" if _located(a) and _located(b) else "added"

    @functools.cached_property
    def spans(self) -> list[ChunkSpan]:
        """The chunks as parents are made of (read once per document per lookup, for all its hits)."""
        return [ChunkSpan(c.chunk_index, c.metadata.get("start") if _located(c) else None,
                          c.metadata.get("end") if _located(c) else None, _path(c), _place(c)) for c in self.chunks]


@dataclass
class Documents:
    """Documents' rows read through `read` (a port's `document_chunks`), each once per lookup."""

    read: Callable[[str], Sequence[StoredChunk]]
    rows: dict[str, Rows] = field(default_factory=dict)

    def __call__(self, doc_id: str) -> Rows:
        if doc_id not in self.rows:
            self.rows[doc_id] = Rows(self.read(doc_id))
        return self.rows[doc_id]


def _one(after: str) -> str:
    """The one character between two chunks: a line break before a heading line (which starts a line), else a
    space."""
    return "\n" if _HEADING_LINE.match(after) else " "


def stitch(chunks: Sequence[StoredChunk], matched: Collection[int]
           ) -> tuple[str, tuple[tuple[int, int], ...], int | None, int | None]:
    """`chunks` (consecutive, in order) as one text (the module's rule), the [start, end) of each chunk whose index
    is in `matched` inside it, and the document offsets the text spans (None: not known)."""
    parts: list[str] = []
    marks: list[tuple[int, int]] = []
    length = 0
    prev: StoredChunk | None = None
    for chunk in chunks:
        text, cut = chunk.content, 0
        if prev is not None:
            joined = _located(prev) and _located(chunk) and not prev.metadata.get("edited") \
                and not chunk.metadata.get("edited")
            gap = chunk.metadata["start"] - prev.metadata["end"] if joined else 2
            cut = min(max(0, -gap), len(text))
            sep = "\n\n" if gap >= 2 else _one(text) if gap == 1 else ""
            parts.append(sep)
            length += len(sep)
        if chunk.chunk_index in matched:
            marks.append((length - cut, length + len(text) - cut))
        parts.append(text[cut:])
        length += len(text) - cut
        prev = chunk
    starts = [c.metadata.get("start") for c in chunks]
    ends = [c.metadata.get("end") for c in chunks]
    located = all(_located(c) for c in chunks)
    return ("".join(parts), tuple(marks), starts[0] if located else None, ends[-1] if located else None)


def section_of(chunks: Sequence[StoredChunk]) -> str:
    """The heading path the chunks share (" > " between headings)."""
    paths = [_path(c) for c in chunks]
    common = paths[0] if paths else ()
    for path in paths[1:]:
        n = 0
        while n < min(len(common), len(path)) and common[n] == path[n]:
            n += 1
        common = common[:n]
    return " > ".join(common)


def single(hit: Candidate, stopped: str = "") -> Block:
    """The block of a hit alone, as it was found."""
    index = hit.chunk_index
    return Block(key=hit.evidence_key, hit=hit, matched=(hit.evidence_key,), content=hit.content,
                 first=index, last=index, before=(index, index) if index is not None else None,
                 start=hit.metadata.get("start") if isinstance(hit.metadata.get("start"), int) else None,
                 end=hit.metadata.get("end") if isinstance(hit.metadata.get("end"), int) else None,
                 stopped=stopped, tokens=count_tokens(hit.content), section=str(hit.metadata.get("headingPath") or ""))


def block_of(rows: Rows, lo: int, hi: int, hit: Candidate, matched: tuple[str, ...], indexes: Collection[int],
             grew: str, stopped: str) -> Block:
    """The block of `rows` positions lo..hi for the hits `matched` (their chunk `indexes`; `hit` the best)."""
    chunks = rows.chunks[lo:hi + 1]
    content, marks, start, end = stitch(chunks, indexes)
    doc_id = hit.doc_id or ""
    return Block(key=block_key(doc_id, min(indexes), max(indexes)), hit=hit, matched=matched, content=content,
                 first=chunks[0].chunk_index, last=chunks[-1].chunk_index, before=(min(indexes), max(indexes)),
                 highlights=marks, start=start, end=end, grew=grew, stopped=stopped, tokens=count_tokens(content),
                 section=section_of(chunks))


def grow(rows: Rows, pos: int, limits: tuple[int, int], budget: int) -> tuple[int, int, str]:
    """From position `pos`, the positions [lo, hi] a block reaches inside `limits` (after, then before, in turn)
    within `budget` tokens (of the block's stitched text; the hit's own chunk is kept whatever its size), and what
    stopped it ("" when it reached its limits)."""
    lo = hi = pos
    stopped = ""
    open_sides = {1: True, -1: True}
    side = 1
    while any(open_sides.values()):
        if open_sides[side]:
            nxt = hi + 1 if side == 1 else lo - 1
            if not limits[0] <= nxt <= limits[1]:
                open_sides[side] = False
            elif why := rows.follows(hi if side == 1 else lo, nxt):
                open_sides[side], stopped = False, stopped or why
            elif rows.tokens(*((lo, nxt) if side == 1 else (nxt, hi))) > budget:
                return lo, hi, "block_tokens"
            else:
                lo, hi = (lo, nxt) if side == 1 else (nxt, hi)
        side = -side
    return lo, hi, stopped


def expand_hit(hit: Candidate, rows: Rows | None, params: ExpandParams, budget: int) -> Block:
    """`hit`'s block (the module's rule); `rows`: its document's chunks (None: the port cannot give them)."""
    if params.mode == "none" or hit.doc_id is None or hit.chunk_index is None:
        return single(hit)
    if rows is None:
        return single(hit, "unavailable")
    pos = rows.at.get(hit.chunk_index)
    if pos is None or rows.chunks[pos].version != hit.metadata.get("version", rows.chunks[pos].version):
        return single(hit, "changed")
    if not _located(rows.chunks[pos]):
        return single(hit, "added")
    if params.mode == "parent":
        first, last = parent_range(rows.spans, pos, params.parent_max_size)
    else:
        first, last = max(0, pos - params.neighbours), min(len(rows.chunks) - 1, pos + params.neighbours)
    lo, hi, stopped = grow(rows, pos, (first, last), budget)
    return block_of(rows, lo, hi, hit, (hit.evidence_key,), (hit.chunk_index,), params.mode, stopped)


def expand_blocks(evidence: Sequence[Candidate], rows_of: Callable[[str], Rows] | None, params: ExpandParams,
                  budget: int) -> tuple[Block, ...]:
    """Each evidence hit's block, in evidence order. `rows_of(doc_id)`: a document's rows (None: the port cannot
    give them); `budget`: rag.block-tokens."""
    return tuple(expand_hit(c, rows_of(c.doc_id) if rows_of is not None and c.doc_id is not None else None,
                            params, budget) for c in evidence)

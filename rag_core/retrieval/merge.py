"""The merge stage's work: blocks of one document whose chunks touch or overlap become one block.

Walking the blocks in rank order, a block joins the first block kept before it that is of the same document and
whose chunk range overlaps its own or ends right before or after it (chunk 4 touches chunks 3 and 5); when the
block so made reaches another kept block (a hit between two), that one joins it too, so no chunk is shown twice.
The block made holds the union of their chunks, stitched again; its evidence key names the range of the hits it holds,
`doc#chunk-a..b` (a and b: the least and greatest chunk index among them), and `matched` lists every hit's own
key, best first. The hits that joined another's block are dropped as `merged_into <key>` (records.DropKind.MERGED).

Two chunks of one document are never merged because they share a source (the spec's rule): only when their
ranges touch. A block without a chunk range, an added chunk's or one whose document changed is never merged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from ..identity import key_range
from ..records import Block, DropKind, DropReason
from .expand import Rows, block_of
from .postprocess import PostProcessed

_ALONE = ("added", "changed", "unavailable")  # a block stopped so is never merged


def _mergeable(block: Block) -> bool:
    return block.first is not None and block.last is not None and block.doc_id is not None \
        and block.stopped not in _ALONE


def _touch(a: Block, b: Block) -> bool:
    assert a.first is not None and a.last is not None and b.first is not None and b.last is not None
    return a.doc_id == b.doc_id and b.first <= a.last + 1 and a.first <= b.last + 1


def _joined(a: Block, b: Block, rows: Rows, rank: Mapping[str, int]) -> Block:
    """One block of `a` (the better) and `b`, their hits listed best first by `rank`."""
    assert a.first is not None and a.last is not None and b.first is not None and b.last is not None
    matched = tuple(sorted(a.matched + b.matched, key=lambda k: rank.get(k, 0)))
    indexes = [r[1] for r in map(key_range, matched) if r is not None]
    lo, hi = rows.at[min(a.first, b.first)], rows.at[max(a.last, b.last)]
    stopped = a.stopped or b.stopped
    return block_of(rows, lo, hi, a.hit, matched, indexes, a.grew, stopped)


def _current(block: Block, rows: Rows) -> bool:
    """Whether the rows as read now hold `block`'s chunks, of the version its hit was found in."""
    ends = [rows.at.get(i) for i in (block.first, block.last) if i is not None]
    version = block.hit.metadata.get("version")
    return len(ends) == 2 and None not in ends and all(
        version is None or rows.chunks[p].version == version for p in ends if p is not None)


def merge_blocks(blocks: Sequence[Block], rows_of: Callable[[str], Rows]) -> tuple[Block, ...]:
    """`blocks` (in rank order) with those that touch merged (the module's rule)."""
    rank = {key: b.hit.rank for b in blocks for key in b.matched}
    kept: list[Block] = []
    for block in blocks:
        into = _touching(kept, block)
        if into is None:
            kept.append(block)
            continue
        rows = rows_of(str(block.doc_id))
        if not _current(kept[into], rows) or not _current(block, rows):
            kept.append(block)  # the rows changed under the blocks: leave them apart
            continue
        kept[into] = _joined(kept[into], block, rows, rank)
        # the block made may now reach a block kept after it (a hit between two): they become one too
        while (other := _touching(kept, kept[into], after=into)) is not None and _current(kept[other], rows):
            kept[into] = _joined(kept[into], kept.pop(other), rows, rank)
    return tuple(kept)


def _touching(kept: Sequence[Block], block: Block, after: int = -1) -> int | None:
    """The position of the first block in `kept` after position `after` that `block` may merge with."""
    return next((i for i, k in enumerate(kept) if i > after and _mergeable(block) and _mergeable(k)
                 and _touch(k, block)), None)


def merged_post(post: PostProcessed, blocks: Sequence[Block]) -> PostProcessed:
    """`post` with the hits that joined another hit's block dropped as merged into it."""
    into = {key: b.key for b in blocks for key in b.matched[1:]}
    if not into:
        return post
    traces = tuple(replace(t, drop=DropReason(DropKind.MERGED, key=t.evidence_key, doc_id=t.doc_id,
                                              by=(into[t.evidence_key],)))
                   if t.drop is None and t.evidence_key in into else t for t in post.traces)
    return PostProcessed(evidence=tuple(c for c in post.evidence if c.evidence_key not in into), traces=traces)

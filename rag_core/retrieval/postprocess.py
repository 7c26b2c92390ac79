"""Post-processing: candidates in ranking order -> evidence blocks, and the fate of every raw hit.

Walking the ranking once, each candidate meets the checks of `CHECKS` in order; the first that drops it gives its
reason (a `records.DropReason` of the check's `DropKind`), and one that passes them all is kept:

0. `Disabled`: a person disabled the chunk (store.edits): left out of every lookup.
   `BelowThreshold`: a score threshold is set (`rag.score-threshold.<mode>`) and its score is below it. Both come
   first: a hit left out or too weak to be evidence takes no place in a cap or in return-n.
1. `Duplicate`: an earlier candidate had the same evidence key (and nothing else makes two candidates
   duplicates). The earlier, higher-ranked content is kept; hit reasons and channels merge.
2. `DocCap`: max-chunks-per-document blocks of its document were already accepted. Candidates without a doc_id
   are not capped (they have no document to count).
3. `ReturnN`: return-n blocks were already accepted.

A check is one class: its `kind`, and `drop(candidate, walk)` that says why it drops the candidate (None: it
passes). The walk holds what every check may read: the lookup's widths and threshold, the blocks accepted so far,
each check's own state. A new reason is a class here, in `CHECKS` where it belongs in the order, with its member of
`records.DropKind` (and `Fate`) and its look in the app (ui/fates.py). Pure functions and data: property-tested.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar, Protocol

from ..records import Candidate, DropKind, DropReason, HitTrace


@dataclass(frozen=True)
class PostProcessed:
    evidence: tuple[Candidate, ...]
    traces: tuple[HitTrace, ...]  # one per input candidate, same order

    @property
    def dropped(self) -> tuple[HitTrace, ...]:
        return tuple(t for t in self.traces if t.drop is not None)


@dataclass
class Walk:
    """One walk down the ranking: the lookup's limits, what was accepted so far, and each check's state."""

    return_n: int
    max_chunks_per_document: int
    score_threshold: float | None
    disabled: Collection[str] = ()  # evidence keys a person disabled (store.edits)
    accepted: list[Candidate] = field(default_factory=list)
    per_doc: dict[str, list[str]] = field(default_factory=dict)  # doc_id -> evidence keys accepted so far
    seen: dict[str, int] = field(default_factory=dict)  # evidence key -> its index in `accepted`, -1: dropped

    def accept(self, cand: Candidate) -> None:
        self.seen[cand.evidence_key] = len(self.accepted)
        self.accepted.append(cand)
        if cand.doc_id is not None:
            self.per_doc.setdefault(cand.doc_id, []).append(cand.evidence_key)


class Check(Protocol):
    """A reason post-processing drops a candidate."""

    kind: ClassVar[DropKind]

    def drop(self, cand: Candidate, walk: Walk) -> DropReason | None:
        """Why `cand` is dropped (a DropReason of `kind`), or None when this check lets it through."""
        ...


class Disabled:
    kind: ClassVar[DropKind] = DropKind.DISABLED

    def drop(self, cand: Candidate, walk: Walk) -> DropReason | None:
        return DropReason(self.kind, key=cand.evidence_key) if cand.evidence_key in walk.disabled else None


class BelowThreshold:
    kind: ClassVar[DropKind] = DropKind.BELOW_THRESHOLD

    def drop(self, cand: Candidate, walk: Walk) -> DropReason | None:
        if walk.score_threshold and cand.score < walk.score_threshold:
            return DropReason(self.kind, key=cand.evidence_key, score=cand.score, threshold=walk.score_threshold)
        return None


class Duplicate:
    """Owns `walk.seen`: a candidate that passes it is seen, so a later one with its key is its duplicate whatever
    the later checks did with it (dropped ones stay -1)."""

    kind: ClassVar[DropKind] = DropKind.DUPLICATE

    def drop(self, cand: Candidate, walk: Walk) -> DropReason | None:
        key = cand.evidence_key
        if key not in walk.seen:
            walk.seen[key] = -1
            return None
        if (index := walk.seen[key]) >= 0:
            walk.accepted[index] = _merge(walk.accepted[index], cand)
        return DropReason(self.kind, key=key, by=(key,))


class DocCap:
    kind: ClassVar[DropKind] = DropKind.DOC_CAP

    def drop(self, cand: Candidate, walk: Walk) -> DropReason | None:
        kept_of_doc = walk.per_doc.get(cand.doc_id, []) if cand.doc_id is not None else []
        if len(kept_of_doc) >= walk.max_chunks_per_document:
            return DropReason(self.kind, doc_id=cand.doc_id, count=len(kept_of_doc), by=tuple(kept_of_doc))
        return None


class ReturnN:
    kind: ClassVar[DropKind] = DropKind.BEYOND_RETURN_N

    def drop(self, cand: Candidate, walk: Walk) -> DropReason | None:
        return DropReason(self.kind, count=walk.return_n) if len(walk.accepted) >= walk.return_n else None


CHECKS: tuple[Check, ...] = (Disabled(), BelowThreshold(), Duplicate(), DocCap(), ReturnN())


def _merge(kept: Candidate, dup: Candidate) -> Candidate:
    reasons = kept.hit_reasons + tuple(r for r in dup.hit_reasons if r not in kept.hit_reasons)
    channels = {**dup.channels, **kept.channels}
    return replace(kept, hit_reasons=reasons, channels=channels)


def _trace(c: Candidate, drop: DropReason | None = None) -> HitTrace:
    return HitTrace(rank=c.rank, id=c.id, score=c.score, doc_id=c.doc_id, chunk_index=c.chunk_index,
                    evidence_key=c.evidence_key, drop=drop, fused_rank=c.rank_before_rerank,
                    rerank_score=c.rerank_score)


def postprocess(candidates: Sequence[Candidate], *, return_n: int, max_chunks_per_document: int,
                score_threshold: float | None = None, disabled: Collection[str] = (),
                checks: Sequence[Check] = CHECKS) -> PostProcessed:
    """Walk the candidates in rank order through `checks`; trace every candidate."""
    if return_n < 1 or max_chunks_per_document < 1:
        raise ValueError("return_n and max_chunks_per_document must be at least 1")
    walk = Walk(return_n, max_chunks_per_document, score_threshold, disabled)
    traces: list[HitTrace] = []
    for cand in sorted(candidates, key=lambda c: c.rank):
        drop = next((reason for check in checks if (reason := check.drop(cand, walk)) is not None), None)
        if drop is None:
            walk.accept(cand)
        traces.append(_trace(cand, drop))
    return PostProcessed(evidence=tuple(walk.accepted), traces=tuple(traces))


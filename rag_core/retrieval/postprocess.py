"""Post-processing: candidates in ranking order -> evidence blocks, and the fate of every raw hit.

Pure functions. Walking the ranking once, each candidate is, in this order of checks:

0. `disabled` when a person disabled the chunk (store.edits): left out of every lookup.
   `below threshold (0.31 < 0.40)` when a score threshold is set (`rag.score-threshold.<mode>`) and its score
   is below it. It comes first: a hit too weak to be evidence takes no place in a cap or in return-n.
1. `duplicate_of <key>` when an earlier candidate had the same evidence key (and nothing else makes two
   candidates duplicates). The earlier, higher-ranked content is kept; hit reasons and channels merge.
2. `doc_cap (<doc_id> already has N)` when N = max-chunks-per-document blocks of its document were
   already accepted. Candidates without a doc_id are not capped (they have no document to count).
3. `beyond_return_n` when return-n blocks were already accepted.
4. `kept` otherwise.

Each drop is a `records.DropReason` (kind, key, doc_id, count and the evidence keys that caused it);
the status strings above are rendered from it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from ..records import Candidate, DropReason, HitTrace


@dataclass(frozen=True)
class PostProcessed:
    evidence: tuple[Candidate, ...]
    traces: tuple[HitTrace, ...]  # one per input candidate, same order

    @property
    def dropped(self) -> tuple[HitTrace, ...]:
        return tuple(t for t in self.traces if t.drop is not None)


def _merge(kept: Candidate, dup: Candidate) -> Candidate:
    reasons = kept.hit_reasons + tuple(r for r in dup.hit_reasons if r not in kept.hit_reasons)
    channels = {**dup.channels, **kept.channels}
    return replace(kept, hit_reasons=reasons, channels=channels)


def _trace(c: Candidate, drop: DropReason | None = None) -> HitTrace:
    return HitTrace(rank=c.rank, id=c.id, score=c.score, doc_id=c.doc_id, chunk_index=c.chunk_index,
                    evidence_key=c.evidence_key, drop=drop, fused_rank=c.rank_before_rerank,
                    rerank_score=c.rerank_score)


def postprocess(candidates: Sequence[Candidate], *, return_n: int, max_chunks_per_document: int,
                score_threshold: float | None = None, disabled: Collection[str] = ()) -> PostProcessed:
    """Drop hits below `score_threshold` (None or 0: off), deduplicate by evidence key, cap per document, cut at
    return-n; trace every candidate."""
    if return_n < 1 or max_chunks_per_document < 1:
        raise ValueError("return_n and max_chunks_per_document must be at least 1")
    first_seen: dict[str, int] = {}  # evidence key -> index in `accepted` (or -1 when it was dropped)
    accepted: list[Candidate] = []
    per_doc: dict[str, list[str]] = {}  # doc_id -> evidence keys accepted so far
    traces: list[HitTrace] = []
    for cand in sorted(candidates, key=lambda c: c.rank):
        key = cand.evidence_key
        if key in disabled:
            traces.append(_trace(cand, DropReason("disabled", key=key)))
            continue
        if score_threshold and cand.score < score_threshold:
            traces.append(_trace(cand, DropReason("below_threshold", key=key, score=cand.score,
                                                  threshold=score_threshold)))
            continue
        if key in first_seen:
            if first_seen[key] >= 0:
                accepted[first_seen[key]] = _merge(accepted[first_seen[key]], cand)
            traces.append(_trace(cand, DropReason("duplicate", key=key, by=(key,))))
            continue
        kept_of_doc = per_doc.get(cand.doc_id, []) if cand.doc_id is not None else []
        if len(kept_of_doc) >= max_chunks_per_document:
            first_seen[key] = -1
            traces.append(_trace(cand, DropReason("doc_cap", doc_id=cand.doc_id, count=len(kept_of_doc),
                                                  by=tuple(kept_of_doc))))
            continue
        if len(accepted) >= return_n:
            first_seen[key] = -1
            traces.append(_trace(cand, DropReason("beyond_return_n", count=return_n)))
            continue
        first_seen[key] = len(accepted)
        accepted.append(cand)
        if cand.doc_id is not None:
            per_doc.setdefault(cand.doc_id, []).append(key)
        traces.append(_trace(cand))
    return PostProcessed(evidence=tuple(accepted), traces=tuple(traces))

"""Post-processing: candidates in ranking order -> evidence blocks, and the fate of every raw hit.

Pure functions. Walking the ranking once, each candidate is, in this order of checks:

1. `duplicate_of <key>` when an earlier candidate had the same evidence key (and nothing else makes two
   candidates duplicates). The earlier, higher-ranked content is kept; hit reasons and channels merge.
2. `doc_cap (<doc_id> already has N)` when N = max-chunks-per-document blocks of its document were
   already accepted. Candidates without a doc_id are not capped (they have no document to count).
3. `beyond_return_n` when return-n blocks were already accepted.
4. `kept` otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from ..records import Candidate, HitTrace


@dataclass(frozen=True)
class PostProcessed:
    evidence: tuple[Candidate, ...]
    traces: tuple[HitTrace, ...]  # one per input candidate, same order

    @property
    def dropped(self) -> tuple[HitTrace, ...]:
        return tuple(t for t in self.traces if t.fate != "kept")


def _merge(kept: Candidate, dup: Candidate) -> Candidate:
    reasons = kept.hit_reasons + tuple(r for r in dup.hit_reasons if r not in kept.hit_reasons)
    channels = {**dup.channels, **kept.channels}
    return replace(kept, hit_reasons=reasons, channels=channels)


def _trace(c: Candidate, fate: str, status: str) -> HitTrace:
    return HitTrace(rank=c.rank, id=c.id, score=c.score, doc_id=c.doc_id, chunk_index=c.chunk_index,
                    evidence_key=c.evidence_key, fate=fate, status=status)


def postprocess(candidates: Sequence[Candidate], *, return_n: int, max_chunks_per_document: int) -> PostProcessed:
    """Deduplicate by evidence key, cap per document, cut at return-n; trace every candidate."""
    if return_n < 1 or max_chunks_per_document < 1:
        raise ValueError("return_n and max_chunks_per_document must be at least 1")
    first_seen: dict[str, int] = {}  # evidence key -> index in `accepted` (or -1 when it was dropped)
    accepted: list[Candidate] = []
    per_doc: dict[str, int] = {}
    traces: list[HitTrace] = []
    for cand in sorted(candidates, key=lambda c: c.rank):
        key = cand.evidence_key
        if key in first_seen:
            if first_seen[key] >= 0:
                accepted[first_seen[key]] = _merge(accepted[first_seen[key]], cand)
            traces.append(_trace(cand, "duplicate", f"duplicate_of {key}"))
            continue
        if cand.doc_id is not None and per_doc.get(cand.doc_id, 0) >= max_chunks_per_document:
            first_seen[key] = -1
            traces.append(_trace(cand, "doc_cap", f"doc_cap ({cand.doc_id} already has {per_doc[cand.doc_id]})"))
            continue
        if len(accepted) >= return_n:
            first_seen[key] = -1
            traces.append(_trace(cand, "beyond_return_n", "beyond_return_n"))
            continue
        first_seen[key] = len(accepted)
        accepted.append(cand)
        if cand.doc_id is not None:
            per_doc[cand.doc_id] = per_doc.get(cand.doc_id, 0) + 1
        traces.append(_trace(cand, "kept", "kept"))
    return PostProcessed(evidence=tuple(accepted), traces=tuple(traces))

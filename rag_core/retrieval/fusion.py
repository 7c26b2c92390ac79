"""Fusing the ranked lists of several channels (dense, BM25) into one ranking. Pure functions.

Fusion runs here rather than inside Milvus so that every fused hit keeps its rank and raw score in
each channel — what the debugger shows for every raw hit. `tests/retrieval/test_fusion_milvus.py`
checks that `rrf` orders hits exactly as Milvus's own `hybrid_search` with `RRFRanker` does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..records import SearchHit


def _merged(ranked: Mapping[str, Sequence[SearchHit]]) -> dict[str, SearchHit]:
    """One hit per id, carrying every channel's (rank, raw score)."""
    by_id: dict[str, SearchHit] = {}
    for channel, hits in ranked.items():
        for rank, hit in enumerate(hits, start=1):
            seen = by_id.get(hit.id)
            channels = {**(seen.channels if seen else {}), channel: (rank, hit.score)}
            by_id[hit.id] = SearchHit(id=hit.id, score=0.0, content=hit.content, metadata=hit.metadata,
                                      channels=channels)
    return by_id


def _ranked(by_id: dict[str, SearchHit], scores: dict[str, float], limit: int) -> list[SearchHit]:
    def order(hit_id: str) -> tuple[float, int, str]:
        best_rank = min(rank for rank, _ in by_id[hit_id].channels.values())
        return (-scores[hit_id], best_rank, hit_id)

    return [SearchHit(id=h, score=scores[h], content=by_id[h].content, metadata=by_id[h].metadata,
                      channels=by_id[h].channels) for h in sorted(by_id, key=order)[:limit]]


def rrf(ranked: Mapping[str, Sequence[SearchHit]], weights: Mapping[str, float], k: int, limit: int) -> list[SearchHit]:
    """Weighted reciprocal-rank fusion: score = sum over channels of weight / (k + rank)."""
    by_id = _merged(ranked)
    scores = {hit_id: sum(weights.get(c, 1.0) / (k + rank) for c, (rank, _) in hit.channels.items())
              for hit_id, hit in by_id.items()}
    return _ranked(by_id, scores, limit)


def weighted(ranked: Mapping[str, Sequence[SearchHit]], weights: Mapping[str, float], limit: int) -> list[SearchHit]:
    """Score-aware fusion: each channel's scores min-max normalised to [0, 1] over its own list, then a
    weighted sum (a channel that did not return a hit contributes 0)."""
    bounds = {}
    for channel, hits in ranked.items():
        values = [h.score for h in hits]
        bounds[channel] = (min(values), max(values)) if values else (0.0, 0.0)

    def norm(channel: str, score: float) -> float:
        low, high = bounds[channel]
        return 1.0 if high == low else (score - low) / (high - low)

    by_id = _merged(ranked)
    scores = {hit_id: sum(weights.get(c, 1.0) * norm(c, raw) for c, (_, raw) in hit.channels.items())
              for hit_id, hit in by_id.items()}
    return _ranked(by_id, scores, limit)

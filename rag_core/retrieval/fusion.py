"""Fusing the ranked lists of several channels (dense, BM25) into one ranking. Pure functions.

Fusion runs here rather than inside Milvus so that every fused hit keeps its rank and raw score in
each channel — what the debugger shows for every raw hit. `tests/retrieval/test_fusion_milvus.py`
checks that `rrf` orders hits exactly as Milvus's own `hybrid_search` with `RRFRanker` does.

`weighted` min-max normalises each channel over its own list, so a channel's best hit scores 1 however weak
it is: four chunks that merely share a generic word with the question take BM25's top places at full weight.
`dbsf` (distribution-based score fusion, as Qdrant's) normalises each channel by its own spread instead (mean
± 3 standard deviations mapped to [0, 1]): only a hit that stands far out of its list gets near 1 (the best of
an evenly spread list gets about 0.7 to 0.8), but an average hit gets about 0.5 rather than near 0.
bench/fusion.py measures which suits each embedder.

A chunk in the other language than the question can never score in BM25, so every fusion above ranks it below
chunks that merely share a generic word with the question, however close the dense channel finds it
("磁盘使用率超过 90% 怎么办？" put four Chinese chunks sharing 使用率 / 超过 above the English disk runbook dense
ranked first). `cross_language` names those hits (the "stand-ins"); each fusion gives them the BM25 share their
dense rank (rrf) or normalised dense score (weighted, dbsf) would earn, instead of nothing: they are not
penalised for the lexical score they could not get. A query with a word in their script (a Chinese question
naming `HighCPUUsage`) could match them, so then nothing stands in. Measured in ARCHITECTURE.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence, Set

from ..languages import CJK, LATIN, has_word_in, language_of
from ..records import SearchHit

NONE: frozenset[str] = frozenset()


def cross_language(query: str, ranked: Mapping[str, Sequence[SearchHit]]) -> set[str]:
    """The ids of the dense hits that stand in for a BM25 score: absent from the BM25 list, in the other language
    than `query`, and `query` has no word in their script (so BM25 could never have matched them)."""
    if "dense" not in ranked or "bm25" not in ranked:
        return set()
    other = LATIN if language_of(query) == CJK else CJK
    if has_word_in(query, other):
        return set()
    lexical = {h.id for h in ranked["bm25"]}
    return {h.id for h in ranked["dense"] if h.id not in lexical and language_of(h.content) == other}


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


def _total(hit: SearchHit, shares: dict[str, float], weights: Mapping[str, float], stand_in: Set[str]) -> float:
    """The weighted sum of a hit's channel shares; a stand-in's BM25 share is its dense one."""
    if hit.id in stand_in and "dense" in shares:
        shares = {**shares, "bm25": shares["dense"]}
    return sum(weights.get(c, 1.0) * share for c, share in shares.items())


def _ranked(by_id: dict[str, SearchHit], scores: dict[str, float], limit: int,
            stand_in: Set[str]) -> list[SearchHit]:
    def order(hit_id: str) -> tuple[float, int, str]:
        best_rank = min(rank for rank, _ in by_id[hit_id].channels.values())
        return (-scores[hit_id], best_rank, hit_id)

    return [SearchHit(id=h, score=scores[h], content=by_id[h].content, metadata=by_id[h].metadata,
                      channels=by_id[h].channels, cross_language=h in stand_in)
            for h in sorted(by_id, key=order)[:limit]]


def rrf(ranked: Mapping[str, Sequence[SearchHit]], weights: Mapping[str, float], k: int, limit: int,
        stand_in: Set[str] = NONE) -> list[SearchHit]:
    """Weighted reciprocal-rank fusion: score = sum over channels of weight / (k + rank); a hit in `stand_in`
    counts its dense rank for BM25 too."""
    by_id = _merged(ranked)
    scores = {hit_id: _total(hit, {c: 1 / (k + rank) for c, (rank, _) in hit.channels.items()}, weights, stand_in)
              for hit_id, hit in by_id.items()}
    return _ranked(by_id, scores, limit, stand_in)


def weighted(ranked: Mapping[str, Sequence[SearchHit]], weights: Mapping[str, float], limit: int,
             stand_in: Set[str] = NONE) -> list[SearchHit]:
    """Score-aware fusion: each channel's scores min-max normalised to [0, 1] over its own list, then a
    weighted sum (a channel that did not return a hit contributes 0, except that a hit in `stand_in` counts its
    normalised dense score for BM25)."""
    bounds = {}
    for channel, hits in ranked.items():
        values = [h.score for h in hits]
        bounds[channel] = (min(values), max(values)) if values else (0.0, 0.0)

    def norm(channel: str, score: float) -> float:
        low, high = bounds[channel]
        return 1.0 if high == low else (score - low) / (high - low)

    return _summed(ranked, weights, norm, limit, stand_in)


def dbsf(ranked: Mapping[str, Sequence[SearchHit]], weights: Mapping[str, float], limit: int,
         stand_in: Set[str] = NONE) -> list[SearchHit]:
    """Distribution-based score fusion: each channel's scores mapped from [mean - 3 sd, mean + 3 sd] (its own
    list's mean and population standard deviation) to [0, 1], clipped, then a weighted sum (a channel that did
    not return a hit contributes 0, except that a hit in `stand_in` counts its normalised dense score for BM25).
    A channel whose scores are all equal (or a single hit) gives 0.5: alone, it says nothing about which of its
    hits is better."""
    bounds = {}
    for channel, hits in ranked.items():
        values = [h.score for h in hits]
        mean = sum(values) / len(values) if values else 0.0
        sd = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values)) if values else 0.0
        bounds[channel] = (mean - 3 * sd, mean + 3 * sd)

    def norm(channel: str, score: float) -> float:
        low, high = bounds[channel]
        return 0.5 if high <= low else min(1.0, max(0.0, (score - low) / (high - low)))

    return _summed(ranked, weights, norm, limit, stand_in)


def _summed(ranked: Mapping[str, Sequence[SearchHit]], weights: Mapping[str, float],
            norm: Callable[[str, float], float], limit: int, stand_in: Set[str]) -> list[SearchHit]:
    by_id = _merged(ranked)
    scores = {hit_id: _total(hit, {c: norm(c, raw) for c, (_, raw) in hit.channels.items()}, weights, stand_in)
              for hit_id, hit in by_id.items()}
    return _ranked(by_id, scores, limit, stand_in)

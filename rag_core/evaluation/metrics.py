"""Retrieval metrics. Pure functions over rankings of doc ids and over returned chunks.

Definitions (also in bench/README.md):

* Document ranking of a result = the `doc_id`s of its evidence blocks, in evidence order, each kept at
  its first occurrence (so it has at most return-n entries: what the agent received). The raw-hit
  document ranking is the same over all raw hits (up to retrieve-k, before post-processing).
* nDCG@k: gain = the qrels grade (linear, as pytrec_eval/BEIR), discount 1/log2(rank + 1); the ideal
  ranking puts every relevant document first by grade. A query with no relevant document scores 0.
* recall@k = |relevant within the first k| / |relevant|.  MRR@k = 1 / rank of the first relevant
  document within the first k, else 0.
* A chunk contains an answer span when it belongs to the answer's document and its offsets
  [start, end) cover [answer.start, answer.start + len(answer.text)). An answer without an offset (the
  hand-written format) is contained when the chunk belongs to a relevant document and its text holds
  the answer verbatim. A query's answer is found when any returned chunk contains any of its answers.
* A chunk hits a gold span (a character range of a document, with no answer text) when it belongs to
  the span's document and they overlap by at least half of the shorter of the two
  (`SPAN_MIN_OVERLAP`): a 60-character span must lie at least 30 characters inside the chunk, and a
  2,000-character span must cover at least half of an 800-character chunk. A chunk that only shares
  its overlap region with a span does not count. span recall@k = |gold spans hit by the first k
  chunks| / |gold spans| (chunk-level: k counts evidence blocks, not documents).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .datasets import Answer, Span

RECALL_KS = (1, 5, 10, 20)
SPAN_MIN_OVERLAP = 0.5
NDCG_K = 10
MRR_K = 10


@dataclass(frozen=True)
class ReturnedChunk:
    """What answer containment needs from a returned chunk."""

    doc_id: str | None
    start: int | None
    end: int | None
    content: str


def document_ranking(doc_ids: Iterable[str | None]) -> list[str]:
    """Doc ids in order, each at its first occurrence; chunks without a document are skipped."""
    seen: set[str] = set()
    ranking = []
    for doc_id in doc_ids:
        if doc_id is not None and doc_id not in seen:
            seen.add(doc_id)
            ranking.append(doc_id)
    return ranking


def dcg(gains: Sequence[float]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def ndcg_at_k(ranking: Sequence[str], relevant: Mapping[str, int], k: int = NDCG_K) -> float:
    ideal = dcg(sorted(relevant.values(), reverse=True)[:k])
    if ideal <= 0:
        return 0.0
    return dcg([relevant.get(d, 0) for d in ranking[:k]]) / ideal


def recall_at_k(ranking: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    if not relevant:
        return 0.0
    return len(set(ranking[:k]) & relevant.keys()) / len(relevant)


def mrr_at_k(ranking: Sequence[str], relevant: Mapping[str, int], k: int = MRR_K) -> float:
    for rank, doc_id in enumerate(ranking[:k], start=1):
        if doc_id in relevant:
            return 1.0 / rank
    return 0.0


def first_relevant_rank(ranking: Sequence[str], relevant: Mapping[str, int]) -> int | None:
    return next((rank for rank, d in enumerate(ranking, start=1) if d in relevant), None)


def document_metrics(ranking: Sequence[str], relevant: Mapping[str, int], prefix: str = "") -> dict[str, float]:
    """nDCG@10, recall@{1,5,10,20} and MRR@10 of one ranking, keys prefixed (e.g. "raw_")."""
    values = {f"{prefix}ndcg@{NDCG_K}": ndcg_at_k(ranking, relevant, NDCG_K)}
    for k in RECALL_KS:
        values[f"{prefix}recall@{k}"] = recall_at_k(ranking, relevant, k)
    values[f"{prefix}mrr@{MRR_K}"] = mrr_at_k(ranking, relevant, MRR_K)
    return values


def chunk_contains(chunk: ReturnedChunk, answer: Answer, relevant: Mapping[str, int] | None = None) -> bool:
    if answer.start is not None and answer.doc_id is not None:
        if chunk.doc_id != answer.doc_id:
            return False
        if chunk.start is not None and chunk.end is not None:
            return chunk.start <= answer.start and answer.start + len(answer.text) <= chunk.end
        return answer.text in chunk.content  # a chunk stored without offsets
    docs = {answer.doc_id} if answer.doc_id else set(relevant or ())
    return chunk.doc_id in docs and answer.text in chunk.content


def answer_found(chunks: Iterable[ReturnedChunk], answers: Sequence[Answer],
                 relevant: Mapping[str, int] | None = None) -> bool:
    chunks = list(chunks)
    return any(chunk_contains(c, a, relevant) for a in answers for c in chunks)


def chunk_overlaps_span(chunk: ReturnedChunk, span: Span) -> bool:
    if chunk.doc_id != span.doc_id or chunk.start is None or chunk.end is None:
        return False
    overlap = min(chunk.end, span.end) - max(chunk.start, span.start)
    shorter = min(chunk.end - chunk.start, span.end - span.start)
    return overlap > 0 and overlap >= SPAN_MIN_OVERLAP * shorter


def span_recall_at_k(chunks: Sequence[ReturnedChunk], spans: Sequence[Span], k: int) -> float:
    if not spans:
        return 0.0
    top = chunks[:k]
    return sum(any(chunk_overlaps_span(c, s) for c in top) for s in spans) / len(spans)


def _offset(metadata: Mapping[str, Any], key: str) -> int | None:
    value = metadata.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def returned_chunk(candidate: Any) -> ReturnedChunk:
    """A retrieval Candidate -> ReturnedChunk (offsets from the chunk metadata `start` / `end`)."""
    metadata = candidate.metadata or {}
    return ReturnedChunk(candidate.doc_id, _offset(metadata, "start"), _offset(metadata, "end"), candidate.content)


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default); 0.0 for no values."""
    return float(np.percentile(np.asarray(values, dtype=float), q)) if len(values) else 0.0


def mean(values: Iterable[float | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return sum(present) / len(present) if present else None

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

What the agent reads (the projection: evidence blocks after the expansion and merge stages and the budgets) is
measured on its own, so the evidence figures above stay comparable with runs made before blocks grew:

* answer in context: an answer's text occurs verbatim in the projected content of an item from the answer's
  document (of a relevant document, for an answer without a document), as an answer without offsets is matched
  in a chunk above.
* span recall (context): the share of the gold span's characters that the projected items' document ranges
  cover (the answer's span, the best of a query's answers; for span labels, the mean over the spans). An item's
  range is its block's `start` plus the length of the text kept after the budgets' cuts, when the block's text is
  an exact slice of the document (its length is `end - start`) and the kept text is its start; any other item (an
  edited or added chunk, a gap left by a disabled one) is not placed, and counts as covering the whole span when
  it holds the answer's text (never for a span label, which has no text).
* context tokens used: the tokens the projected items use (`Projection.tokens`, the tokenizer it names).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..identity import key_range
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


# ---------------------------------------------------------------------------------------- what the agent reads
# The mark the projection puts where a budget cut an item's text (retrieval/projection.py: _cut_chars, _cut_tokens).
_CUT_MARK = re.compile(r" …\[truncated \d+ (?:chars|tokens)\]$")


@dataclass(frozen=True)
class ContextItem:
    """One projected item as the context metrics need it: its document, its text as the agent got it, and where
    in the document the kept text lies ([start, end); None: not known exactly)."""

    doc_id: str | None
    content: str
    start: int | None = None
    end: int | None = None


def context_item(item: Any, block: Any | None) -> ContextItem:
    """A `Projected` item and the `Block` it was projected from (None: not known) -> ContextItem."""
    doc_id = block.doc_id if block is not None else (key_range(item.document_id) or (None,))[0]
    if block is None or block.start is None or block.end is None or block.end - block.start != len(block.content):
        return ContextItem(doc_id, item.content)  # not an exact slice of the document
    kept = _CUT_MARK.sub("", item.content) if item.truncated else item.content
    if not block.content.startswith(kept):
        return ContextItem(doc_id, item.content)
    return ContextItem(doc_id, item.content, block.start, block.start + len(kept))


def _answer_docs(answer: Answer, relevant: Mapping[str, int] | None) -> set[str]:
    return {answer.doc_id} if answer.doc_id else set(relevant or ())


def answer_in_context(items: Sequence[ContextItem], answers: Sequence[Answer],
                      relevant: Mapping[str, int] | None = None) -> bool:
    return any(a.text and c.doc_id in _answer_docs(a, relevant) and a.text in c.content for a in answers for c in items)


def _covered(items: Sequence[ContextItem], doc_id: str, start: int, end: int, text: str | None) -> float:
    """The share of [start, end) of `doc_id` the items cover (an unplaced item holding `text`: all of it)."""
    if end <= start:
        return 0.0
    ranges = []
    for c in items:
        if c.doc_id != doc_id:
            continue
        if c.start is None or c.end is None:
            if text and text in c.content:
                return 1.0
            continue
        lo, hi = max(start, c.start), min(end, c.end)
        if lo < hi:
            ranges.append((lo, hi))
    covered, reach = 0, start
    for lo, hi in sorted(ranges):
        lo = max(lo, reach)
        if hi > lo:
            covered += hi - lo
            reach = hi
    return covered / (end - start)


def span_recall_context(items: Sequence[ContextItem], answers: Sequence[Answer],
                        spans: Sequence[Span] = ()) -> float | None:
    """The gold span's characters covered by the items (the best answer with an offset; else the mean over the span
    labels); None when the query has neither."""
    located = [a for a in answers if a.start is not None and a.doc_id is not None and a.text]
    if located:
        return max(_covered(items, str(a.doc_id), a.start or 0, (a.start or 0) + len(a.text), a.text) for a in located)
    if spans:
        return sum(_covered(items, s.doc_id, s.start, s.end, None) for s in spans) / len(spans)
    return None

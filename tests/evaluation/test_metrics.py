"""Metrics against values computed by hand."""

from __future__ import annotations

import math

import pytest

from rag_core.evaluation.datasets import Answer
from rag_core.evaluation.metrics import (
    ReturnedChunk,
    answer_found,
    chunk_contains,
    document_metrics,
    document_ranking,
    first_relevant_rank,
    mrr_at_k,
    ndcg_at_k,
    percentile,
    recall_at_k,
)
from rag_core.evaluation.runner import summarize


def test_document_ranking_keeps_first_occurrence_and_skips_unknown_documents() -> None:
    assert document_ranking(["a", "b", "a", None, "c", "b"]) == ["a", "b", "c"]
    assert document_ranking([]) == []


def test_ndcg_binary_by_hand() -> None:
    # relevant a, b found at ranks 2 and 4: DCG = 1/log2(3) + 1/log2(5); ideal = 1 + 1/log2(3)
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    ideal = 1 + 1 / math.log2(3)
    assert ndcg_at_k(["x", "a", "y", "b"], {"a": 1, "b": 1}, 10) == pytest.approx(dcg / ideal)
    assert ndcg_at_k(["x", "a", "y", "b"], {"a": 1, "b": 1}, 10) == pytest.approx(0.650920, abs=1e-6)
    # cut at k=3: b (rank 4) no longer counts, the ideal still holds both
    assert ndcg_at_k(["x", "a", "y", "b"], {"a": 1, "b": 1}, 3) == pytest.approx((1 / math.log2(3)) / ideal)
    assert ndcg_at_k(["a", "b"], {"a": 1, "b": 1}) == pytest.approx(1.0)
    assert ndcg_at_k([], {"a": 1}) == 0.0
    assert ndcg_at_k(["a"], {}) == 0.0


def test_ndcg_graded_uses_linear_gain() -> None:
    # grades a=2, b=1, ranking [b, a]: DCG = 1 + 2/log2(3) = 2.26186; ideal = 2 + 1/log2(3) = 2.63093
    assert ndcg_at_k(["b", "a"], {"a": 2, "b": 1}) == pytest.approx(0.859719, abs=1e-6)


def test_recall_and_mrr_by_hand() -> None:
    ranking = ["x", "a", "y", "b", "z"]
    relevant = {"a": 1, "b": 1, "c": 1}
    assert recall_at_k(ranking, relevant, 1) == 0.0
    assert recall_at_k(ranking, relevant, 2) == pytest.approx(1 / 3)
    assert recall_at_k(ranking, relevant, 5) == pytest.approx(2 / 3)
    assert recall_at_k(ranking, relevant, 20) == pytest.approx(2 / 3)  # a short ranking: k past its end
    assert mrr_at_k(ranking, relevant, 10) == 0.5
    assert mrr_at_k(ranking, relevant, 1) == 0.0
    assert mrr_at_k(["c"], relevant) == 1.0
    assert first_relevant_rank(ranking, relevant) == 2
    assert first_relevant_rank(["x"], relevant) is None
    values = document_metrics(ranking, relevant, prefix="raw_")
    assert set(values) == {"raw_ndcg@10", "raw_recall@1", "raw_recall@5", "raw_recall@10", "raw_recall@20",
                           "raw_mrr@10"}


def test_answer_span_containment_uses_half_open_offsets() -> None:
    answer = Answer("needle", doc_id="d1", start=100)  # span [100, 106)
    assert chunk_contains(ReturnedChunk("d1", 100, 106, ""), answer)  # exactly the span
    assert chunk_contains(ReturnedChunk("d1", 0, 800, ""), answer)
    assert not chunk_contains(ReturnedChunk("d1", 101, 800, ""), answer)  # starts one character late
    assert not chunk_contains(ReturnedChunk("d1", 0, 105, ""), answer)  # ends one character early
    assert not chunk_contains(ReturnedChunk("d2", 0, 800, "needle"), answer)  # another document
    # offsets decide, not text: the same words elsewhere in the document do not count
    assert not chunk_contains(ReturnedChunk("d1", 200, 900, "needle"), answer)
    # a stored chunk without offsets falls back to its text
    assert chunk_contains(ReturnedChunk("d1", None, None, "a needle here"), answer)


def test_text_only_answers_need_a_relevant_document() -> None:
    answer = Answer("5 minutes")
    relevant = {"policies/a.md": 1}
    assert chunk_contains(ReturnedChunk("policies/a.md", 0, 50, "within 5 minutes."), answer, relevant)
    assert not chunk_contains(ReturnedChunk("other.md", 0, 50, "within 5 minutes."), answer, relevant)
    assert not chunk_contains(ReturnedChunk("policies/a.md", 0, 50, "within 5\nminutes."), answer, relevant)
    chunks = [ReturnedChunk("other.md", 0, 9, "5 minutes"), ReturnedChunk("policies/a.md", 0, 9, "5 minutes")]
    assert answer_found(chunks, [Answer("nope"), answer], relevant)
    assert not answer_found(chunks[:1], [answer], relevant)
    assert not answer_found([], [answer], relevant)


def test_percentile_interpolates() -> None:
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([10.0], 95) == 10.0
    assert percentile([], 50) == 0.0
    assert percentile(list(range(1, 101)), 95) == pytest.approx(95.05)


def _record(ndcg: float, found: bool | None, raw_found: bool | None, latency: float) -> dict:
    base = {f"{p}{k}": ndcg for p in ("", "raw_") for k in
            ("ndcg@10", "recall@1", "recall@5", "recall@10", "recall@20", "mrr@10")}
    lost = None if found is None else bool(raw_found and not found)
    return {**base, "answer_found": found, "raw_answer_found": raw_found, "answer_lost": lost,
            "distinct_docs": 2, "evidence_blocks": 3, "latency_ms": latency, "failed": not found,
            "first_relevant_rank": 1}


def test_summary_counts_answers_lost_among_those_the_raw_hits_had() -> None:
    records = [_record(1.0, True, True, 10), _record(0.5, False, True, 20), _record(0.0, False, False, 30),
               _record(0.5, None, None, 40)]
    s = summarize(records)
    assert s["queries"] == 4 and s["queries_with_answers"] == 3
    assert s["ndcg@10"] == pytest.approx(0.5)
    assert s["answer_recall"] == pytest.approx(1 / 3)
    assert s["raw_answer_recall"] == pytest.approx(2 / 3)
    assert s["answers_lost"] == pytest.approx(0.5)  # 1 lost of the 2 the raw hits contained
    assert s["answers_lost_count"] == 1
    assert s["latency_p50_ms"] == 25.0
    assert s["distinct_docs"] == 2


def test_summary_without_answers_reports_none() -> None:
    s = summarize([_record(1.0, None, None, 1.0)])
    assert s["answer_recall"] is None and s["answers_lost"] is None and s["queries_with_answers"] == 0


def test_a_chunk_hits_a_span_when_they_overlap_by_half_of_the_shorter() -> None:
    from rag_core.evaluation.datasets import Span
    from rag_core.evaluation.metrics import SPAN_MIN_OVERLAP, chunk_overlaps_span

    assert SPAN_MIN_OVERLAP == 0.5
    chunk = ReturnedChunk("d", 100, 900, "x" * 800)
    short = Span("d", 500, 560)  # 60 characters, all inside the chunk
    assert chunk_overlaps_span(chunk, short)
    assert chunk_overlaps_span(ReturnedChunk("d", 530, 1330, ""), short)  # 30 of 60 inside: exactly half counts
    assert not chunk_overlaps_span(ReturnedChunk("d", 531, 1331, ""), short)  # 29 of 60
    assert not chunk_overlaps_span(ReturnedChunk("e", 100, 900, ""), short)  # another document
    assert not chunk_overlaps_span(ReturnedChunk("d", None, None, "x"), short)  # no offsets: cannot tell
    long = Span("d", 0, 2000)
    assert chunk_overlaps_span(chunk, long)  # the whole chunk lies in the span
    # a chunk that only shares its 100-character overlap region with a span does not count
    assert not chunk_overlaps_span(ReturnedChunk("d", 800, 1600, ""), Span("d", 0, 900))
    assert not chunk_overlaps_span(ReturnedChunk("d", 900, 1000, ""), Span("d", 0, 900))  # touching is not overlapping


def test_span_recall_at_k_counts_spans_hit_by_the_first_k_chunks() -> None:
    from rag_core.evaluation.datasets import Span
    from rag_core.evaluation.metrics import span_recall_at_k

    spans = [Span("d", 0, 100), Span("d", 1000, 1100)]
    chunks = [ReturnedChunk("x", 0, 800, ""), ReturnedChunk("d", 0, 800, ""), ReturnedChunk("d", 900, 1700, "")]
    assert span_recall_at_k(chunks, spans, 1) == 0.0
    assert span_recall_at_k(chunks, spans, 2) == 0.5
    assert span_recall_at_k(chunks, spans, 3) == 1.0
    assert span_recall_at_k(chunks, [], 3) == 0.0

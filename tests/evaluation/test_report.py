"""What the CLI and the page show of a run: columns, point names, run comparison, failed queries, and the
one parser for comma-separated parameter lists."""

from __future__ import annotations

import pytest

from rag_core.errors import EvaluationError
from rag_core.evaluation.params import parse_values
from rag_core.evaluation.report import compare_best, failed_queries, point_names, shown_columns

ROWS = [{"mode": "dense", "retrieve_k": 20, "return_n": 5, "max_chunks_per_document": 2, "ndcg@10": 0.5,
         "recall@5": 0.6, "answer_recall": None, "span_recall@5": 0.4, "latency_p50_ms": 3.0, "failed": 2},
        {"mode": "bm25", "retrieve_k": 20, "return_n": 5, "max_chunks_per_document": 2, "ndcg@10": 0.7,
         "recall@5": 0.8, "answer_recall": None, "span_recall@5": 0.5, "latency_p50_ms": 1.0, "failed": 1}]


def test_columns_show_only_the_metrics_a_set_has() -> None:
    assert shown_columns(ROWS, ["mode"]) == ["mode", "ndcg@10", "recall@5", "span_recall@5", "latency_p50_ms",
                                             "failed"]
    assert shown_columns(ROWS, [])[:4] == ["mode", "retrieve_k", "return_n", "max_chunks_per_document"]
    assert point_names(ROWS, ["mode"]) == ["#1 mode=dense", "#2 mode=bm25"]


def test_compare_best_points_metric_by_metric() -> None:
    other = [{**ROWS[0], "ndcg@10": 0.9, "recall@5": 0.7, "span_recall@5": None}]
    diff = {d["metric"]: d for d in compare_best(ROWS, other)}
    assert set(diff) == {"ndcg@10", "recall@5"}  # span only in A; latency and failed are not compared
    assert diff["ndcg@10"]["A"] == 0.7 and diff["ndcg@10"]["B − A"] == pytest.approx(0.2)  # A's best is bm25


def test_failed_queries_rows_carry_the_columns_the_set_has() -> None:
    point = {"queries": [
        {"query": "a", "relevant": ["d1"], "first_relevant_rank": 1, "answer_found": None, "raw_answer_found": None,
         "span_found": False, "raw_span_found": True, "raw_recall@20": 1.0, "evidence_keys": ["d1#chunk-0"],
         "failed": True},
        {"query": "b", "relevant": ["d2"], "first_relevant_rank": 1, "answer_found": None, "raw_answer_found": None,
         "span_found": True, "raw_span_found": True, "raw_recall@20": 1.0, "evidence_keys": [], "failed": False}]}
    assert failed_queries(point) == [{"query": "a", "relevant": "d1", "first relevant rank": 1, "span found": False,
                                      "in raw hits": True, "evidence": "d1#chunk-0"}]


@pytest.mark.parametrize(("text", "kind", "expected"), [("20, 50", int, [20, 50]), ("0.2,,0.5 ", float, [0.2, 0.5]),
                                                        ("bm25", str, ["bm25"])])
def test_parse_values(text: str, kind: type, expected: list) -> None:
    assert parse_values(text, kind, "x", ("bm25",) if kind is str else None) == expected


@pytest.mark.parametrize(("text", "kind", "message"), [("twenty", int, "retrieve-k: 'twenty' is not a valid int"),
                                                        ("nan", float, "retrieve-k: 'nan' is not a finite number"),
                                                        (" , ", int, "give at least one value"),
                                                        ("vector", str, "'vector' is not one of dense, bm25")])
def test_parse_values_refusals_name_the_field(text: str, kind: type, message: str) -> None:
    with pytest.raises(EvaluationError, match=message):
        parse_values(text, kind, "retrieve-k", ("dense", "bm25") if kind is str else None)

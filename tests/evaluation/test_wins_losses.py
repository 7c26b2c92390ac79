"""Per-query wins and losses between two sweep points (report.wins_losses), the pairs a sweep compares, the
saved-point references of `compare-runs`, and the chart of the differences."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_core.errors import EvaluationError
from rag_core.evaluation import plots
from rag_core.evaluation.report import neighbour_pairs, point_comparisons, wins_losses
from rag_core.evaluation.results import load_point


def q(qid: str, ndcg: float, *, answer: bool | None = None, mrr: float | None = None) -> dict:
    return {"query_id": qid, "query": f"question {qid}", "ndcg@10": ndcg, "mrr@10": ndcg if mrr is None else mrr,
            "recall@1": None, "answer_found": answer}


A = [q("q1", 1.0), q("q2", 0.5), q("q3", 0.0), q("q4", 0.63), q("q5", 0.2)]
B = [q("q1", 0.5), q("q2", 0.5), q("q3", 1.0), q("q4", 0.9), q("q6", 1.0)]


def test_wins_losses_and_ties_by_query_largest_difference_first() -> None:
    result = wins_losses(A, B, labels=("kb=a", "kb=b"))
    assert result.metric == "ndcg@10"  # the first per-query metric both have
    assert [(o.query_id, o.delta) for o in result.b_better] == [("q3", 1.0), ("q4", pytest.approx(0.27))]
    assert [(o.query_id, o.a, o.b) for o in result.a_better] == [("q1", 1.0, 0.5)]
    assert [o.query_id for o in result.ties] == ["q2"]
    assert result.unpaired == 2  # q5 only in A, q6 only in B
    assert result.counts() == {"b_better": 2, "a_better": 1, "ties": 1, "unpaired": 2}
    assert result.summary() == "kb=b better on 2, kb=a better on 1, same on 1, 2 unpaired (by ndcg@10)"
    assert [r["better"] for r in result.rows()] == ["kb=b", "kb=b", "kb=a"]
    saved = result.to_dict()
    assert saved["A"] == "kb=a" and saved["ties"] == ["q2"] and saved["b_better"][0]["query"] == "question q3"
    json.dumps(saved)  # what `eval --json` prints


def test_swapping_the_points_swaps_wins_and_losses() -> None:
    forward, backward = wins_losses(A, B), wins_losses(B, A)
    assert [o.query_id for o in forward.b_better] == [o.query_id for o in backward.a_better]
    assert [o.query_id for o in forward.a_better] == [o.query_id for o in backward.b_better]


def test_another_metric_and_booleans() -> None:
    a = [q("q1", 0.5, answer=True), q("q2", 0.5, answer=False), q("q3", 0.5, answer=None)]
    b = [q("q1", 0.5, answer=False), q("q2", 0.5, answer=True), q("q3", 0.5, answer=None)]
    result = wins_losses(a, b, "answer_found")
    assert [o.query_id for o in result.b_better] == ["q2"] and [o.query_id for o in result.a_better] == ["q1"]
    assert result.unpaired == 1  # q3 has no answer label
    assert wins_losses(a, b, "ndcg@10").counts()["ties"] == 3


@pytest.mark.parametrize(("a", "b", "metric", "message"), [
    (A, [q("x1", 1.0)], None, "share no query"),
    (A, B, "recall@1", r"Cannot compare queries by 'recall@1': use one of ndcg@10, mrr@10"),
    (A, B, "latency_ms", "Cannot compare queries by 'latency_ms'"),
])
def test_refusals_say_what_is_wrong(a, b, metric, message) -> None:
    with pytest.raises(EvaluationError, match=message):
        wins_losses(a, b, metric)


def test_neighbour_pairs_differ_on_one_axis() -> None:
    rows = [{"kb": kb, "chunk_size": size, "rerank": r} for kb, size in (("a", 800), ("b", 300))
            for r in ("none", "openai")]
    # chunk_size differs with the knowledge base: not an axis of its own
    assert neighbour_pairs(rows, ["kb", "rerank"]) == [(0, 1), (0, 2), (1, 3), (2, 3)]
    assert neighbour_pairs(rows, ["kb", "chunk_size", "rerank"]) == [(0, 1), (2, 3)]


def _saved(points: list[tuple[dict, list[dict]]], swept: list[str]) -> dict:
    return {"config": {"varying": swept, "swept": swept},
            "points": [{"params": params, "metrics": {"ndcg@10": sum(x["ndcg@10"] for x in qs) / len(qs)},
                        "queries": qs} for params, qs in points]}


def test_point_comparisons_of_a_saved_run() -> None:
    two = _saved([({"kb": "a"}, A), ({"kb": "b"}, B)], ["kb"])
    [only] = point_comparisons(two)
    assert (only["a_point"], only["b_point"], only["A"], only["B"]) == (1, 2, "#1 kb=a", "#2 kb=b")
    assert only["counts"]["b_better"] == 2
    four = _saved([({"kb": kb, "rerank": r}, A if r == "none" else B) for kb in "ab" for r in ("none", "openai")],
                  ["kb", "rerank"])
    assert [(c["a_point"], c["b_point"]) for c in point_comparisons(four, "mrr@10")] == [(1, 2), (1, 3), (2, 4), (3, 4)]
    assert point_comparisons(_saved([({"kb": "a"}, A)], []), None) == []


def test_load_point_references(tmp_path: Path) -> None:
    run = _saved([({"kb": "a"}, A), ({"kb": "b"}, B)], ["kb"])
    (tmp_path / "run.json").write_text(json.dumps(run), encoding="utf-8")
    assert load_point(f"{tmp_path}#1")[1] == 0
    assert load_point(str(tmp_path / "run.json") + "#2")[1] == 1
    assert load_point(tmp_path)[1] == 1  # without #N: the best row by nDCG@10 (B: 0.78 > A: 0.466)
    with pytest.raises(EvaluationError, match="#3 is not a row of that run .it has rows #1 to #2"):
        load_point(f"{tmp_path}#3")
    with pytest.raises(EvaluationError, match="No saved run"):
        load_point(f"{tmp_path / 'nope'}#1")


def test_chart_of_the_differences() -> None:
    fig = plots.wins_losses(wins_losses(A, B))
    (bars,) = fig.data
    assert list(bars.y) == ["q3", "q4", "q1"] and list(bars.x) == pytest.approx([1.0, 0.27, -0.5])
    assert list(bars.marker.color) == ["#2ca02c", "#2ca02c", "#d62728"]
    assert "B better on 2, A better on 1, same on 1" in fig.layout.title.text
    assert bars.customdata[0][0] == "question q3"

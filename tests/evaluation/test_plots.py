"""Plot builders: pure functions from result rows to plotly figures."""

from __future__ import annotations

from rag_core.evaluation import plots


def rows() -> list[dict]:
    base = {"chunk_size": 800, "overlap": 100, "fusion": None, "rrf_k": None, "dense_weight": None,
            "bm25_weight": None, "return_n": 5, "max_chunks_per_document": 2}
    out = []
    for mode, shift in (("dense", 0.0), ("bm25", 0.1)):
        for k in (20, 10):
            out.append({**base, "mode": mode, "retrieve_k": k, "ndcg@10": 0.5 + shift + k / 100,
                        "recall@1": 0.3, "recall@5": 0.6, "recall@10": 0.7, "recall@20": 0.8,
                        "raw_recall@1": 0.4, "raw_recall@5": 0.7, "raw_recall@10": 0.8, "raw_recall@20": 0.9})
    return out


def test_recall_curves_one_line_per_point() -> None:
    fig = plots.recall_curves(rows(), ["mode", "retrieve_k"])
    assert len(fig.data) == 4
    assert list(fig.data[0].x) == [1, 5, 10, 20] and list(fig.data[0].y) == [0.3, 0.6, 0.7, 0.8]
    assert fig.data[0].name == "mode=dense retrieve_k=20"
    raw = plots.recall_curves(rows(), ["mode", "retrieve_k"], raw=True)
    assert list(raw.data[0].y) == [0.4, 0.7, 0.8, 0.9] and "raw hits" in raw.layout.title.text


def test_metric_vs_parameter_sorts_numeric_values_and_splits_other_parameters() -> None:
    fig = plots.metric_vs_parameter(rows(), "retrieve_k", ["ndcg@10"], ["mode", "retrieve_k"])
    assert [t.name for t in fig.data] == ["nDCG@10 (mode=dense)", "nDCG@10 (mode=bm25)"]
    assert list(fig.data[0].x) == [10, 20]
    assert [round(y, 3) for y in fig.data[0].y] == [0.6, 0.7]
    assert [round(y, 3) for y in fig.data[1].y] == [0.7, 0.8]
    categorical = plots.metric_vs_parameter(rows(), "mode", ["ndcg@10", "recall@5"], ["mode"])
    assert len(categorical.data) == 2 and list(categorical.data[0].x) == ["dense", "dense", "bm25", "bm25"]


def test_per_query_distribution_and_run_comparison() -> None:
    queries = [{"ndcg@10": v, "answer_found": v is not None and v > 0.5, "mode": "dense" if i % 2 else "bm25"}
               for i, v in enumerate([0.0, 0.2, 1.0, 1.0, None])]
    fig = plots.per_query_distribution(queries, "ndcg@10")
    assert len(fig.data) == 1 and list(fig.data[0].x) == [0.0, 0.2, 1.0, 1.0]
    grouped = plots.per_query_distribution(queries, "answer_found", group_by="mode")
    by_name = {t.name: sorted(t.x) for t in grouped.data}
    assert by_name == {"bm25": [0.0, 0.0, 1.0], "dense": [0.0, 1.0]}  # booleans count as 0/1
    bars = plots.compare_runs({"A": {"ndcg@10": 0.5, "recall@5": 0.7}, "B": {"ndcg@10": 0.6, "recall@5": None}},
                              ["ndcg@10", "recall@5"])
    assert [t.name for t in bars.data] == ["A", "B"]
    assert list(bars.data[0].x) == ["nDCG@10", "recall@5"] and list(bars.data[1].y) == [0.6, None]
    assert list(bars.data[0].text) == ["0.500", "0.700"]

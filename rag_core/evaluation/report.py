"""What a run's results look like to people, shared by the CLI, the Evaluation page and the API: which
metrics headline a table, which columns a table shows, how a sweep point is named, how two runs compare.
Pure functions over the rows of `EvalRun.summary_rows()` / `results.summary_rows(saved)`."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .params import PARAM_KEYS

HEADLINE = ("ndcg@10", "recall@1", "recall@5", "recall@10", "recall@20", "mrr@10", "raw_ndcg@10", "raw_recall@20",
            "answer_recall", "raw_answer_recall", "answers_lost", "span_recall@1", "span_recall@5",
            "span_recall@10", "raw_span_recall@20", "distinct_docs", "latency_p50_ms", "latency_p95_ms", "failed")
# Columns per query on the page's distribution chart.
PER_QUERY = ("ndcg@10", "recall@5", "mrr@10", "raw_ndcg@10", "span_recall@5", "first_relevant_rank", "distinct_docs",
             "latency_ms")
DEFAULT_PARAMS = ("mode", "retrieve_k", "return_n", "max_chunks_per_document")
RANK_BY = "ndcg@10"
NOT_COMPARED = ("latency_p50_ms", "latency_p95_ms", "failed")


def shown_metrics(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The headline metrics the rows have values for (answer columns only for sets with answers, span
    columns only for sets with spans)."""
    return [m for m in HEADLINE if any(r.get(m) is not None for r in rows)]


def shown_columns(rows: Sequence[Mapping[str, Any]], varying: Sequence[str]) -> list[str]:
    return [*(list(varying) or DEFAULT_PARAMS), *shown_metrics(rows)]


def point_label(row: Mapping[str, Any], keys: Sequence[str]) -> str:
    """"mode=dense retrieve_k=20" from the parameters `keys` of a row (all parameters when none vary)."""
    shown = [k for k in keys if row.get(k) is not None] or [k for k in PARAM_KEYS if row.get(k) is not None]
    return " ".join(f"{k}={row[k]}" for k in shown)


def point_names(rows: Sequence[Mapping[str, Any]], varying: Sequence[str]) -> list[str]:
    return [f"#{i + 1} {point_label(r, varying)}" for i, r in enumerate(rows)]


def best_point(rows: Sequence[Mapping[str, Any]], by: str = RANK_BY) -> Mapping[str, Any]:
    return max(rows, key=lambda r: r.get(by) or 0.0)


def compare_best(a_rows: Sequence[Mapping[str, Any]], b_rows: Sequence[Mapping[str, Any]],
                 by: str = RANK_BY) -> list[dict[str, Any]]:
    """The best point of each run (by nDCG@10) metric by metric: {metric, A, B, B − A}, for the metrics
    both runs have (latency and the failed count excluded: they are not comparable across machines/sets)."""
    a, b = best_point(a_rows, by), best_point(b_rows, by)
    metrics = [m for m in HEADLINE if m not in NOT_COMPARED and a.get(m) is not None and b.get(m) is not None]
    return [{"metric": m, "A": a[m], "B": b[m], "B − A": b[m] - a[m]} for m in metrics]


def failed_queries(point: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per failed query of a saved point (the page adds its links, e.g. to the debugger). The
    answer and span columns appear for sets that have those labels."""
    queries = point["queries"]
    answers = any(q.get("answer_found") is not None for q in queries)
    spans = any(q.get("span_found") is not None for q in queries)
    rows = []
    for q in queries:
        if not q["failed"]:
            continue
        row: dict[str, Any] = {"query": q["query"], "relevant": "; ".join(q["relevant"]),
                               "first relevant rank": q["first_relevant_rank"]}
        if answers:
            row["answer found"] = q["answer_found"]
        if spans:
            row["span found"] = q["span_found"]
        row["in raw hits"] = (q["raw_answer_found"] if answers else q["raw_span_found"] if spans
                              else q["raw_recall@20"] > 0)
        row["evidence"] = "; ".join(q["evidence_keys"][:5])
        rows.append(row)
    return rows

"""What a run's results look like to people, shared by the CLI, the Evaluation page and the API: which
metrics headline a table, which columns a table shows, how a sweep point is named, how two runs compare
(their best points metric by metric, and two points query by query: wins and losses).
Pure functions over the rows of `EvalRun.summary_rows()` / `results.summary_rows(saved)` and the points'
per-query records."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from .params import PARAM_KEYS

HEADLINE = ("ndcg@10", "recall@1", "recall@5", "recall@10", "recall@20", "mrr@10", "raw_ndcg@10", "raw_recall@20",
            "answer_recall", "raw_answer_recall", "answers_lost", "span_recall@1", "span_recall@5",
            "span_recall@10", "raw_span_recall@20", "answer_in_context", "span_recall_context",
            "context_tokens_used", "distinct_docs", "latency_p50_ms", "latency_p95_ms", "failed")
# Columns per query on the page's distribution chart.
PER_QUERY = ("ndcg@10", "recall@5", "mrr@10", "raw_ndcg@10", "span_recall@5", "span_recall_context",
             "context_tokens_used", "first_relevant_rank", "distinct_docs", "latency_ms")
DEFAULT_PARAMS = ("mode", "retrieve_k", "return_n", "max_chunks_per_document")
RANK_BY = "ndcg@10"
NOT_COMPARED = ("latency_p50_ms", "latency_p95_ms", "failed")
Row = TypeVar("Row", bound=Mapping[str, Any])  # best_point gives back one of the rows, as the caller typed them


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


def best_point(rows: Sequence[Row], by: str = RANK_BY) -> Row:
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
    answer and span columns appear for sets that have those labels; "searched" for a conversational set whose
    rewrite changed a question (the question searched, when it is not the one asked)."""
    queries = point["queries"]
    rewritten = any(q.get("searched") not in (None, q["query"]) for q in queries)
    answers = any(q.get("answer_found") is not None for q in queries)
    spans = any(q.get("span_found") is not None for q in queries)
    rows = []
    for q in queries:
        if not q["failed"]:
            continue
        row: dict[str, Any] = {"query": q["query"]}
        if rewritten:
            row["searched"] = q["searched"] if q.get("searched") not in (None, q["query"]) else ""
        row.update({"relevant": "; ".join(q["relevant"]), "first relevant rank": q["first_relevant_rank"]})
        if answers:
            row["answer found"] = q["answer_found"]
        if spans:
            row["span found"] = q["span_found"]
        row["in raw hits"] = (q["raw_answer_found"] if answers else q["raw_span_found"] if spans
                              else q["raw_recall@20"] > 0)
        row["evidence"] = "; ".join(q["evidence_keys"][:5])
        rows.append(row)
    return rows


# ---------------------------------------------------------------------------------------- per query
# Per-query values two points can be compared by: the first a query set has values for is the default.
PER_QUERY_METRICS = ("ndcg@10", "mrr@10", "recall@1", "recall@5", "recall@10", "span_recall@5", "answer_found",
                     "answer_in_context", "span_recall_context")
TIE = 1e-9


@dataclass(frozen=True)
class QueryOutcome:
    """One query's value of the compared metric at point A and at point B."""

    query_id: str
    query: str
    a: float
    b: float

    @property
    def delta(self) -> float:
        return self.b - self.a

    def to_dict(self) -> dict[str, Any]:
        return {"query_id": self.query_id, "query": self.query, "A": self.a, "B": self.b,
                "B − A": round(self.delta, 6)}


@dataclass(frozen=True)
class WinsLosses:
    """Which queries point B answers better than point A by one per-query metric, which worse, which the same.
    `b_better` and `a_better` are sorted by the size of the difference, largest first. `unpaired`: queries only
    one side has, or without a value of the metric on a side (e.g. no answer label)."""

    metric: str
    a: str
    b: str
    b_better: tuple[QueryOutcome, ...]
    a_better: tuple[QueryOutcome, ...]
    ties: tuple[QueryOutcome, ...]
    unpaired: int

    def counts(self) -> dict[str, int]:
        return {"b_better": len(self.b_better), "a_better": len(self.a_better), "ties": len(self.ties),
                "unpaired": self.unpaired}

    def summary(self) -> str:
        """"#2 dense better on 5, #1 bm25 better on 2, same on 29 (by ndcg@10)": the rows named, so the counts
        cannot be read the wrong way round."""
        return (f"{self.b} better on {len(self.b_better)}, {self.a} better on {len(self.a_better)}, same on "
                f"{len(self.ties)}{f', {self.unpaired} unpaired' if self.unpaired else ''} (by {self.metric})")

    def rows(self) -> list[dict[str, Any]]:
        """Every query that differs, B's wins first: a table for the page and the CLI (`better` names the row)."""
        return ([{"better": self.b, **o.to_dict()} for o in self.b_better]
                + [{"better": self.a, **o.to_dict()} for o in self.a_better])

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "A": self.a, "B": self.b, "counts": self.counts(),
                "b_better": [o.to_dict() for o in self.b_better], "a_better": [o.to_dict() for o in self.a_better],
                "ties": [o.query_id for o in self.ties]}


def _value(query: Mapping[str, Any], metric: str) -> float | None:
    value = query.get(metric)
    if value is None:
        return None
    return float(value)  # answer_found is a bool: found (1) beats not found (0)


def per_query_metrics(queries: Sequence[Mapping[str, Any]]) -> list[str]:
    """The per-query metrics these query records have values for, in PER_QUERY_METRICS order."""
    return [m for m in PER_QUERY_METRICS if any(q.get(m) is not None for q in queries)]


def wins_losses(a_queries: Sequence[Mapping[str, Any]], b_queries: Sequence[Mapping[str, Any]],
                metric: str | None = None, labels: tuple[str, str] = ("A", "B")) -> WinsLosses:
    """Per-query wins and losses of point B against point A (their `queries` records, paired by query id) by
    `metric` (default: the first of PER_QUERY_METRICS both have). Raises EvaluationError when the two share no
    query (different sets) or the metric is not a per-query value they have."""
    from ..errors import EvaluationError

    a_by = {q["query_id"]: q for q in a_queries}
    b_by = {q["query_id"]: q for q in b_queries}
    shared = [qid for qid in a_by if qid in b_by]
    if not shared:
        raise EvaluationError("The two points share no query: compare runs of the same evaluation set.")
    in_b = per_query_metrics([b_by[q] for q in shared])
    available = [m for m in per_query_metrics([a_by[q] for q in shared]) if m in in_b]
    metric = metric or (available[0] if available else "")
    if metric not in available:
        raise EvaluationError(f"Cannot compare queries by {metric!r}: use one of {', '.join(available) or '(none)'}.")
    better_b: list[QueryOutcome] = []
    better_a: list[QueryOutcome] = []
    ties: list[QueryOutcome] = []
    unpaired = len(a_by) + len(b_by) - 2 * len(shared)
    for qid in shared:
        a, b = _value(a_by[qid], metric), _value(b_by[qid], metric)
        if a is None or b is None:
            unpaired += 1
            continue
        outcome = QueryOutcome(qid, a_by[qid].get("query", ""), a, b)
        (ties if abs(outcome.delta) <= TIE else better_b if outcome.delta > 0 else better_a).append(outcome)
    better_b.sort(key=lambda o: -o.delta)
    better_a.sort(key=lambda o: o.delta)
    return WinsLosses(metric, labels[0], labels[1], tuple(better_b), tuple(better_a), tuple(ties), unpaired)


def neighbour_pairs(rows: Sequence[Mapping[str, Any]], axes: Sequence[str]) -> list[tuple[int, int]]:
    """The pairs of sweep points (indexes, i < j) that differ on exactly one axis of the sweep (a run's
    config["swept"]: "kb" counts as one axis with the settings each knowledge base brings): the comparisons
    that say what that one choice does (e.g. knowledge base a vs b at the same reranker)."""
    pairs = []
    for i, j in itertools.combinations(range(len(rows)), 2):
        if sum(rows[i].get(k) != rows[j].get(k) for k in axes) == 1:
            pairs.append((i, j))
    return pairs


def point_comparisons(saved: Mapping[str, Any], metric: str | None = None) -> list[dict[str, Any]]:
    """Per-query wins and losses (`WinsLosses.to_dict()`, with the rows' numbers `a_point`, `b_point`) for the
    pairs of rows of a saved run that differ on one axis of the sweep (two rows: that pair); labels name the
    rows by the sweep's axes ("#1 kb=small rerank=none"). What `eval` prints after its table and puts in its JSON."""
    points = saved["points"]
    rows = [p["params"] for p in points]
    varying = saved["config"].get("varying", [])
    axes = saved["config"].get("swept", varying)
    out = []
    for i, j in ([(0, 1)] if len(points) == 2 else neighbour_pairs(rows, axes)):
        labels = (f"#{i + 1} {point_label(rows[i], axes)}", f"#{j + 1} {point_label(rows[j], axes)}")
        result = wins_losses(points[i]["queries"], points[j]["queries"], metric, labels)
        out.append({"a_point": i + 1, "b_point": j + 1, **result.to_dict()})
    return out


# What a saved run's figures mean that the table cannot say (run_note_items): code -> English template. The app
# renders the codes in the user's language (ui/evaluation.py); the CLI prints these.
RUN_NOTES = {
    "beyond_return_n": "metrics at {ats} rank the evidence the agent gets, at most return-n = {return_ns} documents, "
                       "so beyond it they cannot rise; the raw_ metrics rank the retrieve-k candidates before "
                       "post-processing.",
    "titles_prepended": "{titles} of {documents} corpus documents are indexed with their BEIR title in front of the "
                        "text (as a heading), as the benchmarks do.",
    "machine": "machine: load {before:g} → {after:g} on {cores} cores, {cpu_s:g} s of CPU in this process.",
    "machine_busy": "machine: load {before:g} → {after:g} on {cores} cores, {cpu_s:g} s of CPU in this process; a "
                    "loaded machine: latencies read high.",
}


def run_note_items(saved: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """What a saved run's figures mean that the table cannot say, as (code of RUN_NOTES, parameters): metrics at k
    beyond return-n, titles put in front of BEIR documents, and how loaded the machine was while the latencies
    were taken."""
    notes: list[tuple[str, dict[str, Any]]] = []
    return_ns = sorted({p["params"].get("return_n") for p in saved.get("points", [])} - {None})
    metrics = saved["points"][0]["metrics"] if saved.get("points") else {}
    ks = {int(at) for name, _, at in (k.partition("@") for k in metrics)
          if at.isdigit() and not name.startswith("raw_")}
    beyond = sorted(k for k in ks if return_ns and k > return_ns[0])
    if beyond:
        notes.append(("beyond_return_n", {"ats": ", ".join(f"@{k}" for k in beyond),
                                          "return_ns": "/".join(map(str, return_ns))}))
    info = saved.get("set_info") or {}
    if info.get("titles_prepended"):
        notes.append(("titles_prepended", {"titles": info["titles_prepended"],
                                           "documents": info.get("corpus", {}).get("documents", "?")}))
    machine = saved.get("machine") or {}
    if machine:
        busy = max(machine["load_1m_before"], machine["load_1m_after"]) > 0.75 * machine["cores"]
        notes.append(("machine_busy" if busy else "machine", {
            "before": machine["load_1m_before"], "after": machine["load_1m_after"], "cores": machine["cores"],
            "cpu_s": machine["cpu_s"]}))
    return notes


def run_notes(saved: Mapping[str, Any]) -> list[str]:
    """The notes of `run_note_items`, in English (the CLI's)."""
    return [RUN_NOTES[code].format(**params) for code, params in run_note_items(saved)]

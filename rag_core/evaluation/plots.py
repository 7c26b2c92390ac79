"""Plotly figures for evaluation results. Pure functions: rows in, `go.Figure` out (no Streamlit).

Rows are the dicts of `EvalRun.summary_rows()` / `results.summary_rows(saved)` (parameters + metrics
per sweep point) and of `EvalRun.query_rows()` / a point's `queries` (one per query).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from .metrics import RECALL_KS
from .report import point_label

METRIC_LABELS = {"ndcg@10": "nDCG@10", "mrr@10": "MRR@10", "answer_recall": "answer recall",
                 "raw_answer_recall": "answer recall (raw hits)", "answers_lost": "answers lost by post-processing",
                 "distinct_docs": "distinct documents", "latency_p50_ms": "latency p50 (ms)",
                 "latency_p95_ms": "latency p95 (ms)", "latency_ms": "latency (ms)",
                 "answer_in_context": "answer in context", "span_recall_context": "span recall (context)",
                 "context_tokens_used": "context tokens used"}


def label(metric: str) -> str:
    return METRIC_LABELS.get(metric, metric.replace("_", " "))


def _layout(fig: go.Figure, title: str, x: str, y: str) -> go.Figure:
    fig.update_layout(title=title, xaxis_title=x, yaxis_title=y, template="plotly_white",
                      legend={"orientation": "h", "y": -0.25}, margin={"l": 40, "r": 20, "t": 50, "b": 40})
    return fig


def recall_curves(rows: Sequence[Mapping[str, Any]], varying: Sequence[str] = (), *, raw: bool = False,
                  ks: Sequence[int] = RECALL_KS) -> go.Figure:
    """Document recall@k against k, one line per sweep point (evidence ranking, or raw hits)."""
    prefix = "raw_" if raw else ""
    fig = go.Figure()
    for row in rows:
        fig.add_trace(go.Scatter(x=list(ks), y=[row.get(f"{prefix}recall@{k}") for k in ks], mode="lines+markers",
                                 name=point_label(row, varying)))
    fig.update_yaxes(range=[0, 1.02])
    fig.update_xaxes(tickvals=list(ks))
    return _layout(fig, f"Document recall@k ({'raw hits' if raw else 'evidence'})", "k", "recall")


def metric_vs_parameter(rows: Sequence[Mapping[str, Any]], parameter: str, metrics: Sequence[str],
                        varying: Sequence[str] = (), *, name_of: Callable[[str], str] = label) -> go.Figure:
    """Each metric against one parameter; points that differ in other varying parameters get their own
    line per metric, in parameter order."""
    others = [k for k in varying if k != parameter]
    series: dict[tuple[str, str], list[tuple[Any, Any]]] = {}
    for row in rows:
        group = point_label(row, others) if others else ""
        for metric in metrics:
            series.setdefault((metric, group), []).append((row.get(parameter), row.get(metric)))
    fig = go.Figure()
    numeric = all(isinstance(x, (int, float)) for values in series.values() for x, _ in values if x is not None)
    for (metric, group), values in series.items():
        if numeric:
            values = sorted(values, key=lambda v: (v[0] is None, v[0] if v[0] is not None else 0))
        name = name_of(metric) + (f" ({group})" if group else "")
        fig.add_trace(go.Scatter(x=[str(x) if not numeric else x for x, _ in values], y=[y for _, y in values],
                                 mode="lines+markers", name=name))
    return _layout(fig, f"{', '.join(label(m) for m in metrics)} vs {parameter}", parameter, "value")


def per_query_distribution(query_rows: Sequence[Mapping[str, Any]], metric: str, *,
                           group_by: str | None = None, nbins: int = 20,
                           name_of: Callable[[str], str] = label) -> go.Figure:
    """Histogram of one per-query value (e.g. ndcg@10, first_relevant_rank, latency_ms)."""
    groups: dict[str, list[Any]] = {}
    for row in query_rows:
        value = row.get(metric)
        if isinstance(value, bool):
            value = float(value)
        key = str(row.get(group_by)) if group_by else name_of(metric)
        groups.setdefault(key, []).append(value)
    fig = go.Figure()
    for name, values in groups.items():
        fig.add_trace(go.Histogram(x=[v for v in values if v is not None], name=name, nbinsx=nbins, opacity=0.75))
    fig.update_layout(barmode="overlay")
    return _layout(fig, f"Per-query {label(metric)}", label(metric), "queries")


def compare_runs(runs: Mapping[str, Mapping[str, Any]], metrics: Sequence[str], *,
                 name_of: Callable[[str], str] = label) -> go.Figure:
    """Grouped bars: each metric for each named run (e.g. the best point of two saved runs)."""
    fig = go.Figure()
    for name, row in runs.items():
        fig.add_trace(go.Bar(x=[name_of(m) for m in metrics], y=[row.get(m) for m in metrics], name=name,
                             text=[f"{row[m]:.3f}" if isinstance(row.get(m), float) else "" for m in metrics],
                             textposition="outside"))
    fig.update_layout(barmode="group")
    return _layout(fig, "Run comparison", "metric", "value")


def wins_losses(result: Any) -> go.Figure:
    """Per-query difference B − A of the compared metric (a `report.WinsLosses`), one bar per query that
    differs: B's wins to the right, A's to the left, largest first; the query text on hover."""
    outcomes = [*result.b_better, *reversed(result.a_better)]
    fig = go.Figure(go.Bar(
        x=[o.delta for o in outcomes], y=[o.query_id for o in outcomes], orientation="h",
        marker_color=["#2ca02c" if o.delta > 0 else "#d62728" for o in outcomes],
        customdata=[[o.query[:120], o.a, o.b] for o in outcomes],
        hovertemplate="%{y}: %{customdata[0]}<br>A %{customdata[1]:.3f} → B %{customdata[2]:.3f}<extra></extra>"))
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_layout(height=max(260, 22 * len(outcomes) + 120), showlegend=False)
    counts = result.counts()
    title = (f"Per-query {label(result.metric)}: {result.b} better on {counts['b_better']}, {result.a} better on "
             f"{counts['a_better']}, same on {counts['ties']}")
    return _layout(fig, title, f"B − A ({label(result.metric)})", "query")

"""Pure plotly figure builders (AppTest cannot see figures, so these are unit-tested directly)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from rag_core.records import Chunk

from .fates import COLOURS as FATE_COLORS
from .fates import HIT_FATES, fate_label
from .i18n import t
from .reasons import describe_drop

# No figure titles: pages put a caption above each chart, like every other block.
_LAYOUT = dict(template="plotly_white", margin=dict(l=10, r=10, t=30, b=10), height=320,
               legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0))


def chunk_length_histogram(chunks: Sequence[Chunk], max_size: int | None = None) -> go.Figure:
    """Chunk lengths in characters, with the max-size limit as a dashed line."""
    lengths = [len(c.text) for c in chunks]
    fig = go.Figure(go.Histogram(x=lengths, nbinsx=min(40, max(5, len(lengths))), marker_color="#4c78a8",
                                 hovertemplate=t("%{x} chars: %{y} chunks") + "<extra></extra>", name=t("chunks")))
    if max_size:
        fig.add_vline(x=max_size, line_dash="dash", line_color="#c62828",
                      annotation_text=t("max size {max_size}", max_size=max_size), annotation_position="top left")
    fig.update_layout(xaxis_title=t("characters"), yaxis_title=t("chunks"), bargap=0.05,
                      showlegend=False, **_LAYOUT)
    return fig


def score_by_rank_figure(result: Mapping[str, Any]) -> go.Figure:
    """Score of every raw hit by its rank, one trace per fate (kept, duplicate, cap, beyond return-n, below the
    threshold), and the score threshold as a dashed line when one is set."""
    fig = go.Figure()
    hits = result.get("raw_hits", [])
    for fate in HIT_FATES:
        group = [h for h in hits if h.get("fate") == fate]
        if not group:
            continue
        fig.add_trace(go.Bar(
            x=[h["rank"] for h in group], y=[h["score"] for h in group], name=fate_label(fate),
            marker_color=FATE_COLORS[fate],
            customdata=[[h["evidence_key"], describe_drop(h.get("drop"))] for h in group],
            hovertemplate=t("rank %{x} · score %{y:.4f}") + "<br>%{customdata[0]}<br>%{customdata[1]}<extra></extra>"))
    threshold = (result.get("params") or {}).get("score_threshold")
    if threshold:
        fig.add_hline(y=threshold, line_dash="dash", line_color=FATE_COLORS["below_threshold"],
                      annotation_text=t("threshold {threshold:g}", threshold=threshold),
                      annotation_position="top right")
    fig.update_layout(xaxis_title=t("rank"), yaxis_title=t("score"),
                      xaxis=dict(dtick=1 if len(hits) <= 30 else None), **_LAYOUT)
    return fig


def rerank_movement_figure(result: Mapping[str, Any]) -> go.Figure:
    """Rank before the rerank stage (x) against rank after it (y), one marker per reranked hit, coloured
    by fate: points above the diagonal moved up. Hits beyond the rerank candidates are left out."""
    fig = go.Figure()
    hits = [h for h in result.get("raw_hits", []) if h.get("rerank_score") is not None]
    top = max([1] + [max(h["rank"], h.get("fused_rank", h["rank"])) for h in hits])
    fig.add_trace(go.Scatter(x=[1, top], y=[1, top], mode="lines", name=t("unchanged"),
                             line=dict(color="#bdbdbd", dash="dot"), hoverinfo="skip"))
    for fate in HIT_FATES:
        group = [h for h in hits if h.get("fate") == fate]
        if not group:
            continue
        fig.add_trace(go.Scatter(
            x=[h["fused_rank"] for h in group], y=[h["rank"] for h in group], mode="markers", name=fate_label(fate),
            marker=dict(color=FATE_COLORS[fate], size=9),
            customdata=[[h["evidence_key"], h["rerank_score"], describe_drop(h.get("drop"))] for h in group],
            hovertemplate=t("fused #%{x} → #%{y}") + "<br>%{customdata[0]}<br>"
                          + t("rerank score %{customdata[1]:.4f}") + "<br>%{customdata[2]}<extra></extra>"))
    fig.update_layout(xaxis_title=t("rank before rerank (fused)"), yaxis_title=t("rank after rerank"),
                      yaxis=dict(autorange="reversed"), xaxis=dict(rangemode="tozero"), **_LAYOUT)
    return fig

"""The compare modes. Retrieval debugger: the second side's controls (a knowledge base and its lookup
parameters) and the two evidence lists side by side, marked by `rag_core.retrieval.compare`. Chunk preview: the
second chunking's controls and both chunkings aligned by offset (`rag_core.chunk_compare`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import streamlit as st

from rag_core.bootstrap import Workbench
from rag_core.records import FUSIONS, SearchMode, SearchOptions
from rag_core.retrieval import LookupParams, LookupResult
from rag_core.retrieval.compare import BOTH, ONLY_A, ONLY_B, LookupComparison
from rag_core.retrieval.expand import EXPAND_MODES

from .components import metric_row
from .html import aligned_chunkings_html, compared_evidence_html, esc, mark_badge_html
from .i18n import t
from .reasons import fusion_label, phrase, search_mode_label
from .state import get_workbench, knowledge_bases, readable_kbs, selected_kb


@dataclass(frozen=True)
class Side:
    """One side of the comparison as the page ran it."""

    name: str  # "A" | "B"
    kb: str
    params: LookupParams
    result: LookupResult
    from_cache: bool  # its hits were reused from an earlier search (the timing is that search's)
    chunking: tuple[int, int]  # the knowledge base's (max size, overlap)


def chunking_of(wb: Workbench) -> tuple[int, int]:
    return wb.settings["chunk.max-size"], wb.settings["chunk.overlap"]


def side_b_controls(limits: Mapping[str, int]) -> tuple[Workbench, dict[str, Any]]:
    """B's knowledge base (default: the selected one, so B can be another parameter set on it) and its lookup
    controls, which start at that knowledge base's own defaults. Returns its workbench and `params(...)`
    keyword arguments. Raises RagError when the knowledge base cannot be opened."""
    names = readable_kbs()
    current = selected_kb()
    asked = st.session_state.get("kb_b") or st.query_params.get("kb_b")
    if asked and asked not in names:  # a stale link, or deleted since
        st.warning(t("Knowledge base `{asked}` does not exist (any more); B is `{current}`.", asked=asked,
                     current=current), icon="⚠️")
        st.session_state["kb_b"] = current
    c1, c2, c3 = st.columns([3, 2, 2], vertical_alignment="bottom")
    kb = c1.selectbox(t("B: knowledge base"), names, index=names.index(current) if current in names else 0,
                      key="kb_b", bind="query-params",
                      help=t("Another knowledge base, or the same one with other parameters below."))
    wb = get_workbench(kb)
    d = wb.retriever.defaults
    key = f"cmp.{kb}."  # per knowledge base: choosing another one starts from its own defaults
    modes: list[SearchMode] = ["hybrid", "dense", "bm25"]
    mode = c2.segmented_control(t("B: search"), modes, default=d.search.mode,
                                key=key + "mode", required=True, format_func=search_mode_label)
    fusion = c3.segmented_control(t("B: fusion"), list(FUSIONS), default=d.search.fusion, key=key + "fusion",
                                  required=True, disabled=mode != "hybrid", format_func=fusion_label)
    c1, c2, c3 = st.columns(3)
    def width(col: Any, label: str, name: str, value: int) -> int:  # a default beyond the slider starts at its end
        return col.slider(label, 1, limits[name], min(value, limits[name]), key=key + name)

    retrieve_k = width(c1, t("B: retrieve-k"), "retrieve_k", d.retrieve_k)
    return_n = width(c2, t("B: return-n"), "return_n", d.return_n)
    cap = width(c3, t("B: max chunks per document"), "max_chunks_per_document", d.max_chunks_per_document)
    if return_n > retrieve_k:
        st.warning(t("B: return-n ({return_n}) is larger than retrieve-k ({retrieve_k}); using return-n = "
                     "{retrieve_k}.", return_n=return_n, retrieve_k=retrieve_k))
        return_n = retrieve_k
    c1, c2 = st.columns(2)
    expand = c1.segmented_control(t("B: expand each block to"), list(EXPAND_MODES), default=d.expand.mode,
                                  key=key + "expand", required=True)
    context_tokens = c2.number_input(t("B: tokens in all evidence"), 20, 1_000_000, d.budgets.max_total_tokens,
                                     step=500, key=key + "context_tokens")
    search = SearchOptions(mode=mode, fusion=fusion, rrf_k=d.search.rrf_k, dense_weight=d.search.dense_weight,
                           bm25_weight=d.search.bm25_weight, cross_language=d.search.cross_language)
    return wb, {"retrieve_k": retrieve_k, "return_n": return_n, "max_chunks_per_document": cap, "search": search,
                "expand": replace(d.expand, mode=expand),
                "budgets": replace(d.budgets, max_total_tokens=int(context_tokens))}


def describe_params(params: LookupParams) -> str:
    search = params.search
    how = (t("{mode} ({fusion})", mode=search_mode_label(search.mode), fusion=fusion_label(search.fusion))
           if search.mode == "hybrid" else search_mode_label(search.mode))
    said = t("{how}, retrieve-k {retrieve_k}, return-n {return_n}, cap {cap}", how=how, retrieve_k=params.retrieve_k,
             return_n=params.return_n, cap=params.max_chunks_per_document)
    said += t(", reranked") if params.rerank.enabled else ""
    if params.expand.mode != "none":
        said += t(", blocks grown to {expand}", expand=params.expand.mode)
    return said + t(", {tokens:,} tokens at most", tokens=params.budgets.max_total_tokens)


def comparison_view(comparison: LookupComparison, a: Side, b: Side) -> None:
    """The counts, then each side's evidence list with its marks and its lookup's timing."""
    s = comparison.summary()
    if comparison.by_text:
        st.info(t("`{a}` chunks at {a_size}/{a_overlap} and `{b}` at {b_size}/{b_overlap}: the same evidence key names "
                  "different text, so a chunk counts as found by both when the other side has a chunk of the same "
                  "document sharing at least half of its text.", a=a.kb, a_size=a.chunking[0], a_overlap=a.chunking[1],
                  b=b.kb, b_size=b.chunking[0], b_overlap=b.chunking[1]), icon="📐")
        chunks = t("found by both: {both_a} of A's {a}, {both_b} of B's {b}", both_a=s["chunks_both_a"],
                   a=len(comparison.a), both_b=s["chunks_both_b"], b=len(comparison.b))
    else:
        chunks = t("found by both: {n}", n=s["chunks_both_a"])
    chunks_word, documents_word = esc(t("Chunks")), esc(t("Documents"))
    st.html(f'<div class="compare-summary" style="font-size:0.9rem;line-height:1.9"><b>{chunks_word}</b> '
            f'{esc(chunks)} · {mark_badge_html(ONLY_A)} {s["chunks_only_a"]} · {mark_badge_html(ONLY_B)} '
            f'{s["chunks_only_b"]}<br><b>{documents_word}</b> {mark_badge_html(BOTH)} {s["docs_both"]} · '
            f'{mark_badge_html(ONLY_A)} {s["docs_only_a"]} · {mark_badge_html(ONLY_B)} {s["docs_only_b"]}</div>')
    for col, side, blocks, ms in zip(st.columns(2, gap="medium"), (a, b), (comparison.a, comparison.b),
                                     (comparison.a_ms, comparison.b_ms)):
        with col:
            st.subheader(f"{side.name} · {side.kb}")
            st.caption(describe_params(side.params) + (t(" · hits reused from an earlier search, timed then")
                                                       if side.from_cache else ""))
            timings = side.result.timings
            metric_row([(t("Evidence"), len(blocks)), (t("{side} lookup ms", side=side.name), f"{ms or 0:.0f}"),
                        (t("search ms"), f"{timings.get('search', 0):.0f}")])
            for warning in side.result.warning_phrases:
                st.warning(phrase(warning), icon="⚠️")
            st.html(compared_evidence_html(blocks))


# ------------------------------------------------------------------------------------- chunk preview compare
def chunking_b_controls(a: tuple[int, int]) -> tuple[int, int]:
    """B's max size and overlap for the chunk preview's compare mode. They start at the chunking of a knowledge
    base picked here (by default the first one chunking otherwise than `a`), so two knowledge bases' chunkings
    are one click apart; the sliders then set any other configuration."""
    shown = set(readable_kbs())
    chunkings = {kb.name: (kb.settings["chunk.max-size"], kb.settings["chunk.overlap"])
                 for kb in knowledge_bases().list() if kb.name in shown}
    names = list(chunkings)
    differs = [n for n in names if chunkings[n] != a]
    base = st.selectbox(t("B starts from the chunking of"), names, index=names.index(differs[0]) if differs else 0,
                        format_func=lambda n: f"{n} ({chunkings[n][0]}/{chunkings[n][1]})", key="cp.b_from")
    size, overlap = chunkings.get(base, a)
    c1, c2 = st.columns(2)
    size = c1.slider(t("B: max chunk size"), 50, 4000, size, step=10, key=f"cp.{base}.max_size_b")
    overlap = c2.slider(t("B: overlap"), 0, 1000, overlap, step=10, key=f"cp.{base}.overlap_b")
    return size, overlap


def chunking_comparison_view(text: str, comparison: Any, a: tuple[int, int], b: tuple[int, int],
                             max_chars: int) -> None:
    """Counts for both configurations, then the text with both chunkings' boundaries aligned row by row."""
    counts = comparison.counts()
    both = t("Cuts in both")
    metric_row([(t("A chunks ({size}/{overlap})", size=a[0], overlap=a[1]), len(comparison.a)),
                (t("B chunks ({size}/{overlap})", size=b[0], overlap=b[1]), len(comparison.b)),
                (both, counts[BOTH]), (t("Cuts only in A"), counts[ONLY_A]), (t("Cuts only in B"), counts[ONLY_B])],
               help={both: t("Offsets inside the text where both configurations start or end a chunk.")})
    st.html('<div style="font-size:0.85rem;color:#374151">' + t(  # our own words and badges: no document text
        "A line across a row marks a cut: {both} both configurations cut there, {only_a} or {only_b} one does. Chunk "
        "numbers start where a chunk starts; the yellow gutter is that side's overlap (two chunks).",
        both=mark_badge_html(BOTH), only_a=mark_badge_html(ONLY_A), only_b=mark_badge_html(ONLY_B)) + "</div>")
    st.html(aligned_chunkings_html(text, comparison, max_chars=max_chars))

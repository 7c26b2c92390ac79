"""Retrieval debugger: raw hits next to the deduplicated, capped evidence, and why each hit was dropped;
how the reranker moved them, when one is configured. Compare mode: the same query against another knowledge
base or another parameter set (B), both evidence lists side by side, what both or only one found marked.

Every widget is bound to a URL query parameter (`?q=...&retrieve_k=20&return_n=5&max_chunks_per_document=2
&mode=hybrid`), so other pages link here with a lookup pre-filled and it runs at once. "Previous turns" (`history`):
the conversation before the query, so a follow-up is searched as the standalone question it means; the page shows
the question asked and the one searched. "Context": the expansion, merge and token-budget options (`expand`,
`context_tokens`, ...), which re-run the assemble phase only, and a tab with the evidence blocks the agent gets, each
grown to its section or neighbours with its matched chunks marked, and the projection's tokens against its budget.
"""

from typing import Any

import streamlit as st

from rag_core.agent.kb_tool import tool_payload
from rag_core.errors import RagError
from rag_core.records import Fate
from rag_core.retrieval.compare import compare_lookups
from rag_core.retrieval.options import OPTIONS, lookup_overrides
from rag_core.retrieval.rewrite import read_history_file
from ui.access import current_principal
from ui.blocks import context_view
from ui.charts import rerank_movement_figure, score_by_rank_figure
from ui.compare import Side, chunking_of, comparison_view, side_b_controls
from ui.components import chunk_card, evidence_table, explanation_view, headers, hits_table, metric_row
from ui.controls import BOUND, LIMITS, control, controls
from ui.documents import chunk_editor
from ui.errors import show_error
from ui.fates import HIT_FATES, fate_label, look
from ui.hits import hit_list_html
from ui.html import ChunkView
from ui.i18n import t, tn
from ui.kbs import origin_helps
from ui.lookup import (
    HISTORY,
    access_of,
    cached_explanation,
    cached_lookup,
    debugger_query_params,
    lookup_warnings,
    open_replay,
    rewrite_view,
)
from ui.reasons import describe_drop, location_text, notes, phrase, search_mode_label
from ui.state import workbench_or_stop
from ui.tables import fate_counts, reranked, timings_frame
from ui.upgrade import debugger_caption

current_principal()  # signed in first (ui/access.py): nothing below runs for an unknown person

open_replay()  # a link from another page opens its lookup, not this session's earlier controls (compare mode...)
st.title("🔎 " + t("Retrieval debugger"))
st.caption(t("The same lookup the agent's tool runs: recall `retrieve-k` candidates, deduplicate by evidenceKey, "
             "cap per document, keep `return-n`. Sliders other than retrieve-k and search re-run only "
             "post-processing."))

wb = workbench_or_stop()
defaults = wb.retriever.defaults
access = access_of(wb.settings.kb_name)  # what this session's user may retrieve (ui.lookup.signed_in)
origins = origin_helps(wb.kb)  # where each default came from (default, measured, tuned, by hand): in the help

# Every control is an option of the lookup (rag_core.retrieval.options), bound to the URL under its name. A compact
# bar (the query, the search mode, the widths); the rest one click away; the results right under it.
query_col, mode_col, compare_col = st.columns([4.1, 2.6, 2.5], vertical_alignment="bottom")
query = query_col.text_input(t("Query"), key="q",
                             placeholder=t("e.g. CPU 使用率过高怎么办 / How do I free disk space?"), **BOUND)
options: dict[str, Any] = {}
# codes: a bound widget keeps its labels in the URL
options["mode"] = control(OPTIONS["mode"], defaults, mode_col, origins=origins)
mode = options["mode"]
controls("width", defaults, options, origins=origins)
# The conversation before the query: a follow-up question is searched as the standalone question it means.
with st.expander(t("Previous turns"), expanded=bool(st.session_state.get(HISTORY) or st.query_params.get(HISTORY))):
    history_box = st.text_area(
        t("Previous turns"), key=HISTORY, height=110,
        placeholder=t("user: How do I free disk space?\nassistant: Clean the journal [disk_full.md#chunk-1]"),
        help=t("The conversation before the query, one message per line: `user: …` or `assistant: …` (a line that "
               "starts with neither continues the message above). Empty by default: the query is searched on its "
               "own."), **BOUND) or ""
    options["rewrite"] = control(OPTIONS["rewrite"], defaults)
reranker = wb.retriever.reranker
with st.expander(t("Filters, fusion, threshold and reranking"), expanded=False):
    controls("scope", defaults, options, documents=[d.doc_id for d, _ in wb.listed_documents(access)])
    st.markdown("**" + t("Hybrid fusion") + "**")
    controls("hybrid", defaults, options, origins=origins)
    st.caption(t("RRF scores a hit by Σ weight / (k + rank) over the channels; weighted fusion min-max normalises "
                 "each channel's scores and sums them with the weights."))
    controls("threshold", defaults, options, mode=search_mode_label(mode))
    if reranker is not None:
        controls("rerank", defaults, options, reranker=reranker.name)
        circuit = reranker.state()  # rerank.circuit
        if circuit.state != "closed":
            st.caption(tn("Searches skip this reranker: it failed {n} time in a row ({error}); tried again in "
                          "{seconds:.0f} s.",
                          "Searches skip this reranker: it failed {n} times in a row ({error}); tried again in "
                          "{seconds:.0f} s.", circuit.failures, error=circuit.last_error, seconds=circuit.retry_in_s))
    else:
        st.caption(t("No reranker: set `rerank.provider` to reorder the candidates with a reranking model."))
# The context stages (expansion, merge, token budgets) run on fetched hits: moving these re-runs no search.
with st.expander(t("Context: expansion, merging and token budgets"), expanded=False):
    controls("context", defaults, options, per_row=3, origins=origins)
    st.caption(t("Each evidence block can grow to its parent section or to its neighbouring chunks; hits whose chunks "
                 "touch merge into one block. Tokens are counted per block and over all the evidence the agent is "
                 "given. Changing these runs no new search."))
compare = compare_col.toggle(t("Compare side by side"), key="compare", help=t(
    "Run the query a second time (B) against another knowledge base or with other parameters; the controls above "
    "are A."), **BOUND)
if compare:
    with st.container(border=True):
        try:
            wb_b, overrides_b = side_b_controls(LIMITS)
        except RagError as exc:
            show_error(exc)
            st.stop()

try:
    history = read_history_file(history_box, "Previous turns")
except RagError as exc:  # one clear error; nothing is searched
    show_error(exc, sentence=t("The previous turns cannot be read: write one message per line, starting with "
                               "`user:` or `assistant:`."))
    st.stop()

if not query.strip():
    st.info(t("Type a query to see the raw hits, the evidence the agent gets, and why anything was dropped."),
            icon="⌨️")
    st.stop()

if options["return_n"] > options["retrieve_k"]:
    st.warning(t("return-n ({return_n}) is larger than retrieve-k ({retrieve_k}); using return-n = {retrieve_k}.",
                 return_n=options["return_n"], retrieve_k=options["retrieve_k"]))
    options["return_n"] = options["retrieve_k"]
try:  # the options reach the lookup as the CLI's flags and the API's parameters do
    params = wb.retriever.params(**lookup_overrides(options, wb.settings), history=history, access=access)
    # Fetched hits are kept per knowledge base: the same query on another one is another search.
    result, from_cache = cached_lookup(
        wb.retriever, query, params, st.session_state.setdefault("dbg.fetched", {}).setdefault(wb.settings.kb_name, {})
    )
    if compare:
        # A's rerank (one reranker per process); the same conversation before the query
        params_b = wb_b.retriever.params(**overrides_b, rerank=params.rerank, rewrite=params.rewrite, history=history,
                                         access=access_of(wb_b.settings.kb_name))
        result_b, from_cache_b = cached_lookup(wb_b.retriever, query, params_b, st.session_state["dbg.fetched"]
                                               .setdefault(wb_b.settings.kb_name, {}))
except RagError as exc:
    show_error(exc)
    st.stop()

if compare:
    a = Side("A", wb.settings.kb_name, params, result, from_cache, chunking_of(wb))
    b = Side("B", wb_b.settings.kb_name, params_b, result_b, from_cache_b, chunking_of(wb_b))
    rewrite_view(result.to_dict())
    if result_b.searched != result.searched:  # B's knowledge base read the earlier answers' citations otherwise
        rewrite_view(result_b.to_dict(), prefix="B: ")
    comparison_view(compare_lookups(result, result_b, by_text=a.chunking != b.chunking), a, b)
    st.stop()  # the single-lookup views below are for one side

data = result.to_dict()
rewrite_view(data)  # a follow-up: the question as asked and the one searched
lookup_warnings(data)
if result.scope is not None:
    s = result.scope
    st.pills(t("Filter"), result.scope.scope.items(), key="dbg.chips", disabled=True)
    st.caption(t("The filter kept {kept:,} of {documents:,} documents: it removed {removed:,} documents ({chunks:,} "
                 "chunks) from the search.", kept=len(s.doc_ids), documents=s.documents, removed=s.removed,
                 chunks=s.chunks_removed))
counts = fate_counts(data)
dropped_counts = t(", ").join(t("{n} {reason}", n=counts[fate], reason=fate_label(fate))
                              for fate in HIT_FATES if look(fate).count and counts[fate])
if from_cache:
    how = t("Hits reused from the previous search; only post-processing ran.")
elif result.rerank is not None and reranked(data):
    how = t("Searched the knowledge base ({mode}), reranked the top {n} with {reranker}.",
            mode=search_mode_label(params.search.mode), n=result.rerank.candidates, reranker=result.rerank.reranker)
else:
    how = t("Searched the knowledge base ({mode}).", mode=search_mode_label(params.search.mode))
st.caption(t("{hits} raw hits → {evidence} evidence blocks", hits=len(result.traces), evidence=len(result.evidence))
           + (t(" · dropped: {counts}", counts=dropped_counts) if dropped_counts else "")
           + t(" · {ms:.0f} ms", ms=result.timings["total"]) + " · " + how)
st.caption(debugger_caption(wb))  # which embedder answered (and an upgrade's progress)

# The results first: every hit as a readable row; the evidence as cards; the grids and the figures one tab away.
hits_tab, evidence_tab, context_tab, table_tab, scores_tab = st.tabs([
    t("Raw hits ({n})", n=len(result.traces)), t("Evidence ({n})", n=len(result.evidence)),
    t("Context ({n})", n=len(result.blocks)), t("Table"), t("Scores and timings")])
with hits_tab:
    if data["query_terms"]:
        st.caption(t("BM25 terms of the query (as jieba cut them, Traditional folded to Simplified): {terms}",
                     terms=" · ".join(f"`{w}`" for w in data["query_terms"])))
    st.html(hit_list_html(data["raw_hits"]))
with evidence_tab:
    for i, e in enumerate(data["evidence"]):
        chunk_card(ChunkView(index=e["chunk_index"] if e["chunk_index"] is not None else i, text=e["content"],
                             heading_path=e.get("heading_path", ""), doc_id=e.get("doc_id") or e["evidence_key"],
                             score=e["score"], location=location_text(e.get("location", "")),
                             searched_by=e.get("searched_by", "")), alt=bool(i % 2))
with context_tab:  # the blocks the agent gets: grown, merged, within the token budgets (ui/blocks.py)
    context_view(data)
with table_tab:
    st.subheader(t("Raw hits ({n})", n=len(result.traces)))
    hits_table(data, key="dbg.hits")
    st.subheader(t("Evidence ({n})", n=len(result.evidence)))
    evidence_table(data, key="dbg.evidence")
with scores_tab:
    metric_row([(t("Raw hits"), len(result.traces)), (t("Evidence blocks"), len(result.evidence)),
                *((t(look(fate).count), counts[fate]) for fate in HIT_FATES if look(fate).count
                  and (fate != Fate.NO_ACCESS or "no_access" in data)),  # counted for an admin of the KB only
                (t("Total ms"), f"{result.timings['total']:.0f}")])
    chart_col, timing_col = st.columns([3, 1], gap="medium")
    with chart_col:
        st.markdown("**" + t("Scores by rank, coloured by fate") + "**")
        if data["raw_hits"]:
            st.plotly_chart(score_by_rank_figure(data), key="dbg.scores", config={"displaylogo": False})
        else:
            st.caption(t("No hits to chart."))
    with timing_col:
        st.markdown("**" + t("Stage timings (ms)") + "**")
        timings = timings_frame(result.timings)
        st.dataframe(timings, hide_index=True, width="stretch", key="dbg.timings",
                     column_config=headers(timings.columns))
    if result.rerank is not None and reranked(data):
        moved = [h for h in data["raw_hits"] if h["rerank_score"] is not None and h["fused_rank"] != h["rank"]]
        st.markdown(t("**What the reranker changed** — {moved} of {n} candidates moved; points above the diagonal "
                      "moved up", moved=len(moved), n=result.rerank.candidates))
        st.plotly_chart(rerank_movement_figure(data), key="dbg.rerank", config={"displaylogo": False})
        if result.rerank.notes:
            st.caption(t("Reranker notes: {notes}", notes=t("; ").join(notes(result.rerank))))

dropped = [h for h in data["raw_hits"] if h["fate"] != "kept"]
if dropped:
    with st.expander(tn("Why {n} hit was dropped", "Why {n} hits were dropped", len(dropped)), expanded=False):
        st.markdown("\n".join(f"- #{h['rank']} `{h['evidence_key']}` — {describe_drop(h['drop'])}"
                              for h in dropped))

with st.expander(t("Edit, disable or enable a chunk"), expanded=False):
    first_hits: dict = {}  # each evidence key once, with its first hit
    for h in data["raw_hits"]:
        first_hits.setdefault(h["evidence_key"], h)
    chunk_editor(wb, [{"evidence_key": k, "content": h["content"], "disabled": h["fate"] == "disabled"}
                      for k, h in first_hits.items()], key="dbg")

expected_url = st.query_params.get("expect", "")
with st.expander(t("Why wasn't it retrieved?"), expanded=bool(expected_url)):
    st.caption(t("Pick the document you expected (optionally one of its chunks, or the answer text it should give): "
                 "each chunk's exact rank in both channels over the whole knowledge base, what cut it, and the "
                 "smallest change of retrieve-k / cap / return-n that brings it in."))
    doc_ids = [d.doc_id for d, _ in wb.listed_documents(params.access)]
    e1, e2, e3 = st.columns([3, 1, 3])
    # A document named in the URL (e.g. from the Evaluation page) is offered even if the live knowledge
    # base lacks it, so the panel can say so instead of silently dropping it.
    choices = ["", *doc_ids, *([expected_url] if expected_url and expected_url not in doc_ids else [])]
    expect = e1.selectbox(t("Expected document"), choices, key="expect", format_func=lambda d: d or "—", **BOUND)
    chunk = e2.number_input(t("chunk (optional)"), min_value=0, value=None, step=1, key="expect_chunk",
                            placeholder=t("any"), **BOUND)
    answer = e3.text_input(t("Expected answer text (optional)"), key="answer", **BOUND)
    if expect or answer.strip():
        target = f"{expect}#chunk-{int(chunk)}" if expect and chunk is not None else expect
        try:
            explanation = cached_explanation(wb.retriever, wb.store, query, params, target, answer,
                                             st.session_state.setdefault("dbg.explained", {}).setdefault(
                                                 wb.settings.kb_name, {}))
        except RagError as exc:
            show_error(exc)
        else:
            fix = explanation.get("fix")
            link = fix and debugger_query_params(query, {**params.to_dict(), **fix["changes"]}, explanation["doc_id"],
                                                 expect_chunk=None if chunk is None else int(chunk),
                                                 answer=answer.strip(), history=history_box.strip())
            explanation_view(explanation, link or None, LIMITS)

with st.expander(tn("Agent projection — exactly what the agent's tool returns ({n} item)",
                    "Agent projection — exactly what the agent's tool returns ({n} items)", len(data["projection"]))):
    st.json(tool_payload(result), expanded=3)
    if data["projection_left_out"]:
        st.caption(t("Left out by the projection budgets: {items}", items=", ".join(
            t("`{key}` ({reason})", key=x["evidence_key"], reason=phrase(x.get("reason_phrase"), x["reason"]))
            for x in data["projection_left_out"])))

with st.expander(t("Full lookup result (JSON)")):
    st.json(data, expanded=1)

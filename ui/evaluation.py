"""The words of the Evaluation and Failures pages in the session's language: metric and parameter names, table
headers, chart titles, and the notes rag_core.evaluation gives as codes or constants.

Tables keep their column names (what tests, downloads and links read) and show translated headers through
`st.column_config` (`headers`). Charts are rag_core.evaluation.plots' figures with their names of metrics
(`name_of`), title and axis titles in the session's language. In English every text is the one rag_core or the
page wrote before; ui/test_i18n_pages.py checks the Chinese pages.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from rag_core.evaluation import plots
from rag_core.evaluation.report import RUN_NOTES, run_note_items

from .components import headers as column_config
from .i18n import N_, SOURCE, language, t

EVALUATION_PAGE = "pages/evaluation.py"
# The Evaluation page's widgets that choose a saved test set to run, and the knowledge bases to run it on.
SOURCE_KEY, SAVED_SOURCE = "eval_source", N_("Saved test set")  # the radio, and its value to choose
SAVED_SET_KEY, SAVED_KBS_KEY = "eval_saved_set", "eval_saved_kbs"
GRID_SHOWN = "eval_grid_shown"  # the parameters' values shown last (start_fields)

# Metric codes -> their names (English: plots.label's). Codes at a cut-off (`recall@5`, `nDCG@10`, `MRR@10`) are
# names of their own, in every language; `raw_` and `span_` ones are built from them (metric_name).
METRIC_NAMES = {
    "ndcg": N_("nDCG"), "mrr": N_("MRR"), "span_recall": N_("span recall"),
    "answer_recall": N_("answer recall"), "raw_answer_recall": N_("answer recall (raw hits)"),
    "answers_lost": N_("answers lost by post-processing"), "distinct_docs": N_("distinct documents"),
    "latency_p50_ms": N_("latency p50 (ms)"), "latency_p95_ms": N_("latency p95 (ms)"),
    "latency_ms": N_("latency (ms)"), "failed": N_("failed"), "first_relevant_rank": N_("first relevant rank"),
    "answer_found": N_("answer found"), "answer_in_context": N_("answer in context"),
    "span_recall_context": N_("span recall (context)"), "context_tokens_used": N_("context tokens used"),
}
AT = re.compile(r"^(raw_)?(\w+?)@(\d+)$")

# Column headers of the page's tables (the frames' column names, English as they are) -> the header shown.
HEADERS = {
    # parameters (summary tables)
    "mode": N_("mode"), "fusion": N_("fusion"), "retrieve_k": N_("retrieve_k"), "return_n": N_("return_n"),
    "max_chunks_per_document": N_("max_chunks_per_document"), "chunk_size": N_("chunk_size"),
    "overlap": N_("overlap"), "rrf_k": N_("rrf_k"), "dense_weight": N_("dense_weight"),
    "bm25_weight": N_("bm25_weight"), "rerank": N_("rerank"), "kb": N_("kb"), "queries": N_("queries"),
    "expand": N_("expand"), "expand_neighbours": N_("expand_neighbours"), "block_tokens": N_("block_tokens"),
    "context_tokens": N_("context_tokens"), "answer_in_context": N_("answer_in_context"),
    "span_recall_context": N_("span_recall_context"), "context_tokens_used": N_("context_tokens_used"),
    # metrics (summary tables)
    "answer_recall": N_("answer_recall"), "raw_answer_recall": N_("raw_answer_recall"),
    "answers_lost": N_("answers_lost"), "distinct_docs": N_("distinct_docs"), "latency_p50_ms": N_("latency_p50_ms"),
    "latency_p95_ms": N_("latency_p95_ms"), "failed": N_("failed"),
    # failed queries, comparisons, wins and losses
    "query": N_("query"), "searched": N_("searched"), "relevant": N_("relevant"),
    "first relevant rank": N_("first relevant rank"),
    "answer found": N_("answer found"), "span found": N_("span found"), "in raw hits": N_("in raw hits"),
    "evidence": N_("evidence"), "debugger": N_("debugger"), "metric": N_("metric"), "better": N_("better"),
    "query_id": N_("query_id"),
    # test sets: review and answers
    "id": N_("id"), "review": N_("review"), "answer": N_("answer"), "should not answer": N_("should not answer"),
    "asked after": N_("asked after"),
    "kind": N_("kind"), "source": N_("source"), "citations": N_("citations"), "found": N_("found"), "f1": N_("f1"),
    "valid": N_("valid"), "support": N_("support"), "refused": N_("refused"), "faithfulness": N_("faithfulness"),
    "verdicts": N_("verdicts"),
    # failures
    "asked": N_("asked"), "knowledge base": N_("knowledge base"), "asked by": N_("asked by"),
    "question": N_("question"), "comment": N_("comment"), "cited": N_("cited"),
}
# Values of the review table's "review" column and of a set's counts (codes; shown translated).
REVIEW_NAMES = {"unreviewed": N_("unreviewed"), "accepted": N_("accepted"), "edited": N_("edited"),
                "dropped": N_("dropped"), "should_not_answer": N_("should not answer")}
# Why a generator left a candidate out (rag_core.evaluation.generate.filters.REASONS), shown as counts.
REJECTED_NAMES = {"answer_not_in_chunk": N_("answer not in chunk"), "copied_question": N_("copied question"),
                  "duplicate": N_("duplicate"), "wrong_language": N_("wrong language"), "malformed": N_("malformed"),
                  "model_failed": N_("model failed"), "answered_by_kb": N_("answered by the knowledge base"),
                  "lookup_failed": N_("lookup failed"), "no_terms": N_("no terms"),
                  "stands_alone": N_("follow-up stands alone")}
# rag_core.evaluation.report.RUN_NOTES, the same English (tests/ui/test_i18n_pages.py checks they agree).
RUN_NOTE_TEXTS = {
    "beyond_return_n": N_("metrics at {ats} rank the evidence the agent gets, at most return-n = {return_ns} "
                          "documents, so beyond it they cannot rise; the raw_ metrics rank the retrieve-k candidates "
                          "before post-processing."),
    "titles_prepended": N_("{titles} of {documents} corpus documents are indexed with their BEIR title in front of "
                           "the text (as a heading), as the benchmarks do."),
    "machine": N_("machine: load {before:g} → {after:g} on {cores} cores, {cpu_s:g} s of CPU in this process."),
    "machine_busy": N_("machine: load {before:g} → {after:g} on {cores} cores, {cpu_s:g} s of CPU in this process; "
                       "a loaded machine: latencies read high."),
}
# Constants of rag_core shown as they are in English (the same text: tests/ui/test_i18n_pages.py).
FAILED_RULE = N_("no relevant document among the evidence, or (for sets with answers) no evidence chunk contains an "
                 "answer, or (for sets with spans) no evidence chunk hits a gold span")
OFFLINE_WARNING = N_("Offline questions are made of the documents' own words (their headings, sentences and "
                     "distinctive terms), so they flatter keyword search (BM25): use them to compare configurations "
                     "with each other, not as a measure of absolute quality.")
NO_JUDGE = N_("no judge model configured (eval.judge-model): faithfulness is not measured; the other figures do "
              "not need one")
KNOWN = {FAILED_RULE, OFFLINE_WARNING, NO_JUDGE}
# The sweep's parameters (rag_core.evaluation.params.LABELS) and their settings' help (config.KEYS[...].help), the
# same English (tests/ui/test_i18n_pages.py checks they agree).
PARAM_LABELS = {"chunk_size": N_("chunk size"), "overlap": N_("overlap"), "mode": N_("search mode"),
                "fusion": N_("fusion"), "rrf_k": N_("RRF k"), "dense_weight": N_("dense weight"),
                "bm25_weight": N_("BM25 weight"), "retrieve_k": N_("retrieve-k"), "rerank": N_("reranker"),
                "return_n": N_("return-n"), "max_chunks_per_document": N_("max chunks per document"),
                "expand": N_("expand"), "expand_neighbours": N_("expand neighbours"),
                "block_tokens": N_("block tokens"), "context_tokens": N_("context tokens")}
MODES = {"dense": N_("dense"), "bm25": N_("bm25"), "hybrid": N_("hybrid")}
# Stages of an EvalProgress (runs, generation, answer scoring).
STAGES = {"indexing": N_("indexing"), "querying": N_("querying"), "reading": N_("reading"),
          "generating": N_("generating"), "answering": N_("answering")}
GENERATOR_NAMES = {"model": N_("model"), "offline": N_("offline")}


def review_name(state: str) -> str:
    return t(REVIEW_NAMES[state]) if state in REVIEW_NAMES else state


def param_label(name: str) -> str:
    return t(PARAM_LABELS[name]) if name in PARAM_LABELS else name


def mode_name(mode: str) -> str:
    return t(MODES[mode]) if mode in MODES else mode


def stage_name(stage: str) -> str:
    return t(STAGES[stage]) if stage in STAGES else stage


def generator_name(generator: str) -> str:
    return t(GENERATOR_NAMES[generator]) if generator in GENERATOR_NAMES else generator


def metric_name(code: str) -> str:
    """`answer_recall` -> "answer recall" (答案召回率); `recall@5` stays; `raw_ndcg@10` -> "nDCG@10 (raw hits)"."""
    if (found := AT.match(code)) is not None:
        raw, base, k = found.groups()
        name = f"{t(METRIC_NAMES[base]) if base in METRIC_NAMES else base}@{k}"
        return t("{metric} (raw hits)", metric=name) if raw else name
    return t(METRIC_NAMES[code]) if code in METRIC_NAMES else code.replace("_", " ")


def known_text(text: str) -> str:
    """A constant of rag_core (FAILED_RULE, OFFLINE_WARNING) in the session's language; other text as it is."""
    return t(text) if text in KNOWN else text


def run_notes(saved: Mapping[str, Any]) -> list[str]:
    """report.run_notes in the session's language."""
    return [t(RUN_NOTE_TEXTS[code], **params) if code in RUN_NOTE_TEXTS else RUN_NOTES[code].format(**params)
            for code, params in run_note_items(saved)]


def counts_text(counts: Mapping[str, int], names: Mapping[str, str] = REVIEW_NAMES, sep: str = " · ") -> str:
    """`unreviewed 3 · accepted 0 · ...` with the names translated (codes not named: underscores as spaces)."""
    return sep.join(f"{t(names[k]) if k in names else k.replace('_', ' ')} {v}" for k, v in counts.items())


def column_header(column: str) -> str:
    """A table's column header: the column's name in English (a metric code stays one), its name in Chinese."""
    if column in HEADERS:
        return t(HEADERS[column])
    return column if language() == SOURCE else metric_name(column)


def headers(columns: Iterable[str], **config: Any) -> dict[str, Any]:
    """`column_config` for a table: every column's header in the session's language (the column names, what
    tests and downloads read, unchanged); `config` gives columns their own (a link column, an editable one)."""
    return column_config(columns, config, label=column_header)


def preselect_saved_set(name: str, kb: str | None = None) -> None:
    """The Evaluation page opens with saved test set `name` chosen (and knowledge base `kb` to run it on): for a link
    there (`st.page_link(EVALUATION_PAGE)`) from a page that just saved the set. Its widgets read these values when
    they are drawn next."""
    st.session_state[SOURCE_KEY] = SAVED_SOURCE
    st.session_state[SAVED_SET_KEY] = name
    if kb:
        st.session_state[SAVED_KBS_KEY] = [kb]


def start_fields(values: Mapping[str, Any], shown: str = GRID_SHOWN) -> None:
    """Keyed fields (widget key -> value) that start at `values` and follow them when they change (another knowledge
    base or embedder chosen): a field still at the value shown before takes the new one, a field the person changed
    keeps theirs. A keyed widget keeps its value when its default changes, so its default cannot say it. Call before
    the widgets are drawn, and draw them without a default."""
    before = st.session_state.get(shown) or {}
    for key, value in values.items():
        if key not in st.session_state or (key in before and st.session_state[key] == before[key]):
            st.session_state[key] = value
    st.session_state[shown] = dict(values)


def link_column(column: str = "debugger") -> Any:
    return st.column_config.LinkColumn(column_header(column), display_text=t("open"))


# ------------------------------------------------------------------------------------------ charts
def _titled(fig: go.Figure, title: str, x: str, y: str) -> go.Figure:
    fig.update_layout(title=title, xaxis_title=x, yaxis_title=y)
    return fig


def recall_curves(rows: Sequence[Mapping[str, Any]], varying: Sequence[str], *, raw: bool = False) -> go.Figure:
    fig = plots.recall_curves(rows, varying, raw=raw)
    title = t("Document recall@k (raw hits)") if raw else t("Document recall@k (evidence)")
    return _titled(fig, title, "k", t("recall"))


def metric_vs_parameter(rows: Sequence[Mapping[str, Any]], parameter: str, metrics: Sequence[str],
                        varying: Sequence[str]) -> go.Figure:
    fig = plots.metric_vs_parameter(rows, parameter, metrics, varying, name_of=metric_name)
    title = t("{metrics} vs {parameter}", metrics=", ".join(metric_name(m) for m in metrics), parameter=parameter)
    return _titled(fig, title, parameter, t("value"))


def per_query_distribution(query_rows: Sequence[Mapping[str, Any]], metric: str) -> go.Figure:
    fig = plots.per_query_distribution(query_rows, metric, name_of=metric_name)
    return _titled(fig, t("Per-query {metric}", metric=metric_name(metric)), metric_name(metric), t("queries"))


def compare_runs(runs: Mapping[str, Mapping[str, Any]], metrics: Sequence[str]) -> go.Figure:
    return _titled(plots.compare_runs(runs, metrics, name_of=metric_name), t("Run comparison"), t("metric"),
                   t("value"))


def wins_losses(result: Any) -> go.Figure:
    counts = result.counts()
    name = metric_name(result.metric)
    title = t("Per-query {metric}: {b} better on {b_better}, {a} better on {a_better}, same on {ties}", metric=name,
              a=result.a, b=result.b, b_better=counts["b_better"], a_better=counts["a_better"], ties=counts["ties"])
    return _titled(plots.wins_losses(result), title, f"B − A ({name})", t("query"))

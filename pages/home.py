"""Home: what is loaded, which chat mode is active, and how to start."""

import streamlit as st

import ui.state
from ui.components import embedder_tradeoff, ingest_summary, metric_row, run_ingest
from ui.state import chat_mode, get_settings, workbench_or_stop

st.title("🧰 RAG workbench")
st.caption("Upload documents, preview their chunks, debug retrieval and chat with an agent that cites "
           "the knowledge base.")

wb = workbench_or_stop()
settings = wb.settings
docs = wb.store.list_documents()
mode = chat_mode(get_settings())  # read now: keys come from the environment

metric_row([("Documents", len(docs)), ("Chunks", sum(d.chunks for d in docs)),
            ("Vector dimension", wb.embedder.dim), ("Chat mode", mode.label)],
           help={"Vector dimension": wb.embedder.name, "Chat mode": mode.detail})

public = settings.public()
st.markdown(
    f"**Milvus:** `{public['milvus.uri']}` · collection `{public['milvus.collection']}`  \n"
    f"**Embedder:** `{wb.embedder.name}` ({wb.embedder.dim}-d)  \n"
    f"**Chat:** {mode.label}{'' if mode.kind == 'offline' else ' — ' + mode.detail}  \n"
    f"**Retrieval defaults:** retrieve-k {public['rag.retrieve-k']}, return-n {public['rag.return-n']}, "
    f"max {public['rag.max-chunks-per-document']} chunks per document, {public['rag.search-mode']} search  \n"
    f"**Chunking:** max {public['chunk.max-size']} characters, overlap {public['chunk.overlap']}"
)
with st.expander("Embedders: quality vs ingest time (measured)"):
    embedder_tradeoff(settings["embedding.provider"])
if mode.kind == "offline":
    st.info("No chat model key found: the agent answers in **offline mode** (extractive, with citations). "
            "Set `DASHSCOPE_API_KEY`, or `RAG_CHAT_BASE_URL` with `OPENAI_API_KEY`, and restart for a chat model.",
            icon="💡")

if not docs:
    st.subheader("The knowledge base is empty")
    sample = ui.state.SAMPLE_KB_DIR
    shown = sample.relative_to(ui.state.REPO_ROOT) if sample.is_relative_to(ui.state.REPO_ROOT) else sample
    st.write(f"Load the bundled sample — runbooks, product notes and policies in English and Chinese "
             f"(`{shown}`) — or upload your own documents on the Knowledge base page.")
    if st.button("Load sample knowledge base", type="primary", key="load_sample", icon="📦"):
        reports = run_ingest(lambda progress: wb.ingestor.ingest_paths([ui.state.SAMPLE_KB_DIR], progress=progress))
        st.session_state["home.sample_reports"] = reports
        st.rerun()
if reports := st.session_state.get("home.sample_reports"):
    with st.expander("Sample knowledge base: ingest results", expanded=False):
        ingest_summary(reports)

st.subheader("How to start")
st.page_link("pages/knowledge_base.py", label="**Knowledge base** — upload files, see the document list, "
             "delete or re-index", icon="📚")
st.page_link("pages/chunk_preview.py", label="**Chunk preview** — tune max size and overlap live, see every "
             "overlap highlighted", icon="✂️")
st.page_link("pages/debugger.py", label="**Retrieval debugger** — raw hits next to the deduplicated, capped "
             "evidence, with the reason for every drop", icon="🔎")
st.page_link("pages/chat.py", label="**Agent chat** — ask questions; see every tool call, the evidence it "
             "returned and the cited chunks", icon="💬")
st.caption("Everything runs locally by default: Milvus Lite in the data folder and a local multilingual "
           "embedder, no key needed. The same steps work from the command line: `python -m rag_core --help`.")

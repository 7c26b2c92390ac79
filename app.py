"""Entry point: `streamlit run app.py`. Navigation and the shared sidebar only; no logic here."""

from pathlib import Path

import streamlit as st

from rag_core.errors import RagError
from ui.state import chat_mode, get_settings

st.set_page_config(page_title="RAG workbench", page_icon="🧰", layout="wide")

HERE = Path(__file__).resolve().parent
PAGES = [
    ("pages/home.py", "Home", "🏠"),
    ("pages/knowledge_base.py", "Knowledge base", "📚"),
    ("pages/chunk_preview.py", "Chunk preview", "✂️"),
    ("pages/debugger.py", "Retrieval debugger", "🔎"),
    ("pages/chat.py", "Agent chat", "💬"),
    ("pages/evaluation.py", "Evaluation", "📏"),
]
# A page whose file is not there yet (built in parallel) is left out rather than breaking the app.
pages = [st.Page(path, title=title, icon=icon, default=(path == "pages/home.py"))
         for path, title, icon in PAGES if (HERE / path).is_file()]
page = st.navigation(pages)

with st.sidebar:
    try:
        settings = get_settings()
        mode = chat_mode(settings)
        st.caption(f"Chat: **{mode.label}** · data: `{settings.data_dir}`")
    except RagError as exc:  # a bad rag.toml or environment value: every page would fail the same way
        st.error(str(exc))

page.run()

"""Entry point: `streamlit run app.py`. Navigation and the shared sidebar only; no logic here."""

import streamlit as st

# First, before anything imports `ui`: this session's runs go through app.py (ui/navigation.py).
st.session_state["_app.entered"] = True

from rag_core.errors import RagError  # noqa: E402
from ui.errors import show_error  # noqa: E402
from ui.i18n import language_switcher, t  # noqa: E402
from ui.navigation import pages  # noqa: E402
from ui.state import chat_mode, get_settings, kb_switcher  # noqa: E402

st.set_page_config(page_title=t("RAG workbench"), page_icon="🧰", layout="wide")
page = st.navigation(pages())

with st.sidebar:
    language_switcher()
    try:
        settings = get_settings()
        kb_switcher()
        mode = chat_mode(settings)
        st.caption(t("Chat: **{mode}** · data: `{data}`", mode=mode.label, data=settings.data_dir))
    except RagError as exc:  # a bad rag.toml or environment value: every page would fail the same way
        show_error(exc, icon=None)

page.run()

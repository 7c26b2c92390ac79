"""Entry point: `streamlit run app.py`. Navigation and the shared sidebar only; no logic here."""

import streamlit as st

# First, before anything imports `ui`: this session's runs go through app.py (ui/navigation.py).
st.session_state["_app.entered"] = True

from rag_core.errors import RagError  # noqa: E402
from ui.access import current_principal, identify, who_box  # noqa: E402
from ui.errors import show_error  # noqa: E402
from ui.i18n import language_switcher, t  # noqa: E402
from ui.navigation import pages  # noqa: E402
from ui.state import chat_mode, get_settings, kb_switcher  # noqa: E402

st.set_page_config(page_title=t("RAG workbench"), page_icon="🧰", layout="wide")
# Before any page: who is asking (served to others, the sign-in screen until they sign in; ui/access.py). The
# navigation is made first, hidden until then, so the page in the URL (a bookmarked debugger link) opens after it.
page = st.navigation(pages(), position="sidebar" if identify(check=True) else "hidden")
with st.sidebar:
    language_switcher()
current_principal(check=False)  # the sign-in screen, if identify() found nobody

with st.sidebar:
    who_box()
    try:
        settings = get_settings()
        kb_switcher()
        mode = chat_mode(settings)
        st.caption(t("Chat: **{mode}** · data: `{data}`", mode=mode.label, data=settings.data_dir))
    except RagError as exc:  # a bad rag.toml or environment value: every page would fail the same way
        show_error(exc, icon=None)

page.run()

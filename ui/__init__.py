"""Streamlit-side helpers shared by the pages: the cached workbench, rendering components, and the
pure functions behind them (HTML, tables, plotly figures), which are unit-tested without Streamlit.

Importing `ui` (every page does) also works around a Streamlit quirk: when the folder next to app.py
is called `pages/`, Streamlit starts each server process in the old "pages directory" mode until
app.py has called `st.navigation` once. A first request straight to a page URL (a bookmarked
`/debugger?q=...`) would then run that page alone — no app.py, no wide layout, a sidebar listing
"app" and raw file names. The first page run in a process imports this package, switches the mode
off and reruns, so app.py runs and `st.navigation` picks the page from the URL as usual.
"""


def _leave_pages_directory_mode() -> None:
    try:
        from streamlit.runtime.pages_manager import PagesManager
        from streamlit.runtime.scriptrunner import get_script_run_ctx
    except ImportError:  # a future Streamlit without this internal: nothing to work around, or no way to
        return
    if PagesManager.uses_pages_directory and get_script_run_ctx(suppress_warning=True) is not None:
        import streamlit as st

        PagesManager.uses_pages_directory = False
        st.rerun()


_leave_pages_directory_mode()

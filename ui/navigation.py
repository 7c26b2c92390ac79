"""The app's pages, and the guard that sends a page URL opened first on a fresh server through app.py.

Streamlit starts a server whose entry script has a folder named `pages/` next to it in its legacy
"pages directory" mode, until `st.navigation` has been called once in that process (as documented:
st.navigation makes Streamlit ignore the `pages/` directory). A first request straight to a page URL (a
bookmarked `/debugger?q=...`) would run that page alone: no app.py, no wide layout, a sidebar listing
"app" and raw file names. So app.py marks the session before it imports `ui` (ENTERED), and the first page
run that finds no mark calls `st.navigation` itself and reruns: app.py then runs and picks the page from
the URL as usual. Public API only; tests/e2e/test_e2e_pages.py opens a page URL first on a fresh server
and fails loudly if a Streamlit release changes this.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from .i18n import N_, t

REPO_ROOT = Path(__file__).resolve().parent.parent
PAGES = [
    ("pages/home.py", N_("Home"), "🏠"),
    ("pages/knowledge_base.py", N_("Knowledge base"), "📚"),
    ("pages/chunk_preview.py", N_("Chunk preview"), "✂️"),
    ("pages/debugger.py", N_("Retrieval debugger"), "🔎"),
    ("pages/chat.py", N_("Agent chat"), "💬"),
    ("pages/evaluation.py", N_("Evaluation"), "📏"),
    ("pages/failures.py", N_("Failures"), "👎"),
]
HOME = "pages/home.py"
# What each page is for, in Home's "How to start" (every page but Home, in the navigation's order): a page added to
# PAGES without a line here is still listed, by its title (tests/ui/test_ui_navigation.py asks for its line).
PURPOSES = {
    "pages/knowledge_base.py": N_("**Knowledge base** — upload files, see the document list, delete or re-index"),
    "pages/chunk_preview.py": N_("**Chunk preview** — tune max size and overlap live, see every overlap "
                                 "highlighted"),
    "pages/debugger.py": N_("**Retrieval debugger** — raw hits next to the deduplicated, capped evidence, with the "
                            "reason for every drop"),
    "pages/chat.py": N_("**Agent chat** — ask questions; see every tool call, the evidence it returned and the cited "
                        "chunks"),
    "pages/evaluation.py": N_("**Evaluation** — measure retrieval on a labelled set, sweep its parameters, generate "
                              "and review test sets, score the agent's answers"),
    "pages/failures.py": N_("**Failures** — answers rated 👎: open them in the debugger, or add them to a test set "
                            "with what they should have found"),
}
ENTERED = "_app.entered"  # the session-state key app.py sets first (it cannot import it: that would import ui)


def pages(root: Path = REPO_ROOT) -> list[st.Page]:
    """The app's pages, home the default. A listed page whose file is missing stops the app with its name:
    left out, it would be gone for every user without a word."""
    missing = [path for path, _, _ in PAGES if not (root / path).is_file()]
    if missing:
        raise FileNotFoundError(f"ui/navigation.py lists {', '.join(missing)}, not found in {root}: restore "
                                "the file, or remove it from PAGES.")
    # Absolute paths: the guard below may run with a page as the main script (AppTest on one page).
    return [st.Page(root / path, title=t(title), icon=icon, default=(path == HOME))
            for path, title, icon in PAGES]


def how_to_start() -> list[tuple[str, str, str]]:
    """(page file, what it is for, icon) of every page but Home, in the navigation's order, for Home's list."""
    return [(path, t(PURPOSES[path]) if path in PURPOSES else f"**{t(title)}**", icon)
            for path, title, icon in PAGES if path != HOME]


def page_file(path: str) -> Path:
    """The file of page `path` ("pages/chat.py") for `st.page_link`: absolute, as `pages()` gives it to st.navigation,
    so the link is found whichever script runs as the main one (app.py, or a page run alone by AppTest, where a
    relative path would be looked up under pages/)."""
    return REPO_ROOT / path


def run_through_app() -> None:
    """Called when `ui` is first imported: a page running without app.py (see the module docstring)
    ends the legacy mode with st.navigation and reruns. A no-op outside a Streamlit run."""
    if not st.runtime.exists() or st.session_state.get(ENTERED):
        return
    st.session_state[ENTERED] = True  # once: a page run as the main script (AppTest) then just runs
    st.navigation(pages(), position="hidden")
    st.rerun()

"""The page list and the guard that sends a page URL opened first through app.py (ui/navigation.py).
The guard's real case, a fresh server whose first request is a page URL, is tests/e2e/test_e2e_pages.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from tests.ui.apptest_helpers import app_at
from ui.navigation import ENTERED, HOME, PAGES, PURPOSES, REPO_ROOT, pages, run_through_app

# The pages' URL paths: bookmarks and the debugger links other pages build (`/debugger?q=...`) rely on them.
URL_PATHS = ["", "knowledge_base", "chunk_preview", "debugger", "chat", "evaluation", "failures"]


def test_every_page_file_is_in_the_navigation_and_back():
    listed = {path for path, _, _ in PAGES}
    on_disk = {f"pages/{p.name}" for p in (REPO_ROOT / "pages").glob("*.py")}
    assert listed == on_disk


def test_every_page_but_home_says_what_it_is_for_in_how_to_start():
    assert set(PURPOSES) == {path for path, _, _ in PAGES} - {HOME}
    assert all(PURPOSES[path].startswith(f"**{title}** — ") for path, title, _ in PAGES if path != HOME)


def _page_facts() -> None:
    """An app script: the facts of `pages()` as Streamlit sees them (a Page is only filled in during a run)."""
    import streamlit as st

    from ui.navigation import pages

    st.session_state["facts"] = [(p.title, p.icon, p.url_path) for p in pages()]


def test_the_pages_have_their_titles_icons_and_urls_and_home_is_the_default():
    at = AppTest.from_function(_page_facts, default_timeout=30).run()
    assert not at.exception, at.exception
    assert at.session_state["facts"] == [(title, icon, url) for (_, title, icon), url in zip(PAGES, URL_PATHS)]


def test_a_listed_page_whose_file_is_missing_stops_the_app_with_its_name(tmp_path: Path):
    shutil.copytree(REPO_ROOT / "pages", tmp_path / "pages")
    (tmp_path / "pages" / "chat.py").unlink()
    with pytest.raises(FileNotFoundError, match=r"lists pages/chat\.py, not found in .*remove it from PAGES"):
        pages(tmp_path)


def _a_page_opened_first() -> None:
    """An app script standing for a page run without app.py: it records, per run, whether the session was
    marked when the run began, then calls the guard as `import ui` does on a fresh server."""
    import streamlit as st

    from ui.navigation import ENTERED, run_through_app

    st.session_state.setdefault("marked_at_start", []).append(ENTERED in st.session_state)
    run_through_app()
    st.markdown("the page ran")


def test_a_page_opened_first_marks_the_session_and_reruns_through_the_navigation():
    at = AppTest.from_function(_a_page_opened_first, default_timeout=30).run()
    assert not at.exception, at.exception
    # The first run stopped at the guard (nothing after it rendered) and ran again, marked, to the end.
    assert at.session_state["marked_at_start"] == [False, True]
    assert [m.value for m in at.markdown] == ["the page ran"]
    at.run()  # later runs of the session go straight through
    assert at.session_state["marked_at_start"] == [False, True, True] and not at.exception


def test_the_guard_does_nothing_outside_a_streamlit_run(monkeypatch: pytest.MonkeyPatch):
    called: list[str] = []
    if ENTERED in st.session_state:  # outside a run this is one dict for the process
        monkeypatch.delitem(st.session_state, ENTERED)
    monkeypatch.setattr(st, "navigation", lambda *a, **k: called.append("navigation"))
    monkeypatch.setattr(st, "rerun", lambda *a, **k: called.append("rerun"))
    run_through_app()  # importing `ui` outside a run (the unit tests, the CLI) must not navigate
    assert called == []


@pytest.mark.milvus  # app.py's sidebar opens the knowledge base
def test_the_app_marks_the_session_and_opens_home_by_default():
    at = app_at()
    assert at.session_state[ENTERED] is True and not at.exception
    assert [t.value for t in at.title] == ["🧰 RAG workbench"]

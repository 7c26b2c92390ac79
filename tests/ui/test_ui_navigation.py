"""The page list and the guard that sends a page URL opened first through app.py (ui/navigation.py).
The guard's real case, a fresh server whose first request is a page URL, is tests/e2e/test_e2e_pages.py."""

from __future__ import annotations

from ui.navigation import ENTERED, PAGES, REPO_ROOT, run_through_app
from tests.ui.apptest_helpers import app_at


def test_every_page_file_is_in_the_navigation_and_back():
    listed = {path for path, _, _ in PAGES}
    on_disk = {f"pages/{p.name}" for p in (REPO_ROOT / "pages").glob("*.py")}
    assert listed == on_disk


def test_app_marks_the_session_with_the_key_the_guard_reads():
    at = app_at()
    assert at.session_state[ENTERED] is True and not at.exception


def test_the_guard_is_a_no_op_outside_a_streamlit_run():
    run_through_app()  # no runtime: nothing to do, nothing raised

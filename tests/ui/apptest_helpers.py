"""Helpers for AppTest tests (imported as tests.ui.apptest_helpers)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

REPO = Path(__file__).resolve().parents[2]
APP = str(REPO / "app.py")


def app_at(page: str | None = None, **query: str) -> AppTest:
    """The app (through app.py, so navigation and the sidebar run too), optionally on `page`."""
    at = AppTest.from_file(APP, default_timeout=60)
    for name, value in query.items():
        at.query_params[name] = value
    at.run()
    assert not at.exception, at.exception
    if page:
        at.switch_page(page)
        at.run()
        assert not at.exception, at.exception
    return at


def texts(at: AppTest, kind: str = "markdown") -> str:
    return "\n".join(str(e.value) for e in getattr(at, kind))

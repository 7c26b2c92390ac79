"""Sign-in and the per-user view of the app (ui/access.py, issue 37): on loopback no sign-in; served to others or
with auth.required, a sign-in screen before any page, a wrong token refused, a good one opening the pages with
only what that user may see and do."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from streamlit.testing.v1 import AppTest

import ui.access
from rag_core import bootstrap
from rag_core.access.memory import MemoryAccessStore
from rag_core.access.records import Role
from tests.ui.apptest_helpers import APP, texts

pytestmark = pytest.mark.milvus  # app.py's sidebar opens the knowledge base


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> Iterator[MemoryAccessStore]:
    """The access store the app builds, in memory (bootstrap.build_access_store patched), fresh for each test."""
    made = MemoryAccessStore()
    monkeypatch.setattr(bootstrap, "build_access_store", lambda settings, env=None: made)
    ui.access.clear_access_store()
    yield made
    ui.access.clear_access_store()


@pytest.fixture
def required(monkeypatch: pytest.MonkeyPatch, store: MemoryAccessStore) -> MemoryAccessStore:
    monkeypatch.setenv("RAG_AUTH_REQUIRED", "true")
    return store


def start(page: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    return at


def sign_in(at: AppTest, token: str) -> AppTest:
    # Under AppTest only the first run goes through app.py; later runs run the page alone, whose widgets are other
    # widgets to Streamlit. So the form is drawn once more by the page (which signs in first too), then filled.
    at.run()
    at.text_input(key="access.token").input(token)
    at.button(key="access.submit").click().run()
    assert not at.exception, at.exception
    return at


def test_loopback_is_one_persons_tool_without_sign_in(kb, store):
    at = start()
    assert [t.value for t in at.title] == ["🧰 RAG workbench"]
    assert not at.text_input  # no token asked for
    assert ui.access.PRINCIPAL not in at.session_state


def test_sign_in_screen_before_any_page(kb, required):
    at = start()
    assert [t.value for t in at.title] == ["🔐 Sign in"]
    assert at.text_input[0].label == "Token"
    assert not at.sidebar.selectbox  # no knowledge-base switcher, nothing of the pages


def test_a_wrong_token_is_refused_and_stays_on_sign_in(kb, required):
    required.create_user("ann", {"*": Role.READER})
    at = sign_in(start(), "rwb_wrong")
    assert [t.value for t in at.title] == ["🔐 Sign in"]
    assert "not valid" in at.error[0].value
    assert ui.access.PRINCIPAL not in at.session_state


def test_a_good_token_opens_the_pages_and_keeps_no_token(kb, required):
    _, token = required.create_user("ann", {"*": Role.READER})
    at = sign_in(start(), token)
    print([t.value for t in at.title], texts(at))
    assert at.session_state[ui.access.PRINCIPAL].name == "ann"
    assert token not in repr([at.session_state[k] for k in at.session_state])

"""Signing in, in a real browser (ui/access.py, issue 37): an app with `auth.required = true` asks for a token
before any page, refuses a wrong one in one line, opens the page of the URL with the right one (the server's
RAG_API_TOKEN; a user's own token when the access store is shared between processes), and signs out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.conftest import SCREENSHOTS, SEED_FILES, AppServer, _chromium_or_skip, seed, start_app, stop_app
from tests.e2e.helpers import open_page, wait_idle

pytestmark = pytest.mark.e2e
API_TOKEN = "e2e-sign-in-token-0123456789abcdef"


@pytest.fixture(scope="module")
def signed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    _chromium_or_skip()
    data_dir = Path(tmp_path_factory.mktemp("e2e-sign-in"))
    seed(data_dir, SEED_FILES)
    server = start_app(data_dir, {"RAG_AUTH_REQUIRED": "true", "RAG_API_TOKEN": API_TOKEN})
    yield server
    stop_app(server)


@pytest.fixture
def tab(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1440, "height": 1400}, locale="en-US")
    context.set_default_timeout(30_000)
    page = context.new_page()
    yield page
    SCREENSHOTS.mkdir(exist_ok=True)
    try:
        page.screenshot(path=str(SCREENSHOTS / f"{request.node.name}.png"))
    finally:
        context.close()


def submit(page: Page, token: str) -> None:
    page.get_by_label("Token", exact=True).fill(token)
    page.get_by_role("button", name="Sign in").click()


def test_sign_in_with_a_token_then_sign_out(tab: Page, signed_server: AppServer) -> None:
    # A bookmarked page: the sign-in screen comes first, nothing of the page or the sidebar's lists.
    open_page(tab, signed_server.url, "knowledge_base", heading="🔐 Sign in")
    expect(tab.get_by_role("heading", name="📚 Knowledge base")).to_have_count(0)
    expect(tab.get_by_test_id("stSidebarNav")).to_have_count(0)

    submit(tab, "rwb_not-a-token")
    expect(tab.get_by_text("That token is not valid")).to_be_visible()
    wait_idle(tab)
    expect(tab.get_by_role("heading", name="🔐 Sign in")).to_be_visible()
    expect(tab.get_by_label("Token", exact=True)).to_have_value("")  # the form forgets what was typed

    submit(tab, API_TOKEN)
    expect(tab.get_by_role("heading", name="📚 Knowledge base")).to_be_visible(timeout=60_000)
    wait_idle(tab, timeout=60_000)
    expect(tab.get_by_text("Signed in as")).to_be_visible()
    expect(tab.get_by_test_id("stSidebarNav")).to_be_visible()

    # Another page of the same browser session: no second sign-in.
    tab.get_by_test_id("stSidebarNav").get_by_text("Retrieval debugger").click()
    expect(tab.get_by_role("heading", name="🔎 Retrieval debugger")).to_be_visible(timeout=60_000)
    wait_idle(tab, timeout=60_000)

    tab.get_by_role("button", name="Sign out").click()
    expect(tab.get_by_role("heading", name="🔐 Sign in")).to_be_visible()
    expect(tab.get_by_text("Signed out.")).to_be_visible()


def test_a_users_own_token_signs_in_as_that_user(tab: Page, signed_server: AppServer) -> None:
    from rag_core import bootstrap
    from rag_core.access.records import Role
    from rag_core.config import load_settings

    store = bootstrap.build_access_store(load_settings(data_dir=signed_server.data_dir, env={}))
    try:
        assert store.where != "memory", "the app's process must see a user made here (the SQL store shares them)"
        _, token = store.create_user("e2e_reader", {"*": Role.READER})
    finally:
        store.close()
    open_page(tab, signed_server.url, "", heading="🔐 Sign in")
    submit(tab, token)
    expect(tab.get_by_text("Signed in as e2e_reader")).to_be_visible(timeout=60_000)

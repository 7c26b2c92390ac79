"""The Failures page's links into the debugger in a real browser: a failure opens its own lookup, not the compare
mode (and B) the debugger was left in, since the debugger's controls keep their values across pages."""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import Page, expect

from rag_core.config import load_settings
from rag_core.feedback import FILE_NAME, Lookup, TurnRecord, TurnStore
from tests.e2e.helpers import open_page, wait_idle

pytestmark = pytest.mark.e2e
QUERY = "free disk space (e2e failure)"


def _failure(data_dir) -> None:
    settings = load_settings(data_dir=data_dir, env={})
    store = TurnStore(data_dir / FILE_NAME)
    turn = store.add(TurnRecord(os.urandom(8).hex(), "How do I free disk space? (e2e failure)", "Restart the node.",
                                (settings["milvus.collection"],),
                                (Lookup(QUERY, {"retrieve_k": 6, "return_n": 3, "max_chunks_per_document": 1,
                                                "search_mode": "bm25"}, ("cpu_high.md#chunk-0",)),),
                                ("cpu_high.md#chunk-0",), trace_id=os.urandom(16).hex()))
    store.rate(-1, "wrong runbook", trace_id=turn.trace_id)


def test_a_failure_opens_its_lookup_not_the_compare_mode_the_debugger_was_left_in(page: Page, app_server) -> None:
    _failure(app_server.data_dir)
    open_page(page, app_server.url, "debugger?q=disk%20usage", heading="🔎 Retrieval debugger")
    page.get_by_text("Compare side by side").click()
    expect(page.get_by_text("B: knowledge base")).to_be_visible(timeout=60_000)
    wait_idle(page)
    assert "compare=true" in page.url

    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Failures").click()
    link = page.get_by_role("link", name=f"Open “{QUERY}” in the retrieval debugger")
    expect(link).to_be_visible(timeout=60_000)
    wait_idle(page)
    link.click()
    expect(page.get_by_role("heading", name="🔎 Retrieval debugger")).to_be_visible(timeout=60_000)
    expect(page.get_by_text("Searched the knowledge base (bm25)")).to_be_visible(timeout=60_000)
    wait_idle(page)
    expect(page.get_by_role("switch", name="Compare side by side")).not_to_be_checked()
    expect(page.get_by_text("B: knowledge base")).to_have_count(0)
    assert "compare" not in page.url and "kb_b" not in page.url and "replay" not in page.url, page.url
    assert "retrieve_k=6" in page.url and "mode=bm25" in page.url, page.url

"""Knowledge bases in a real browser: two knowledge bases chunked differently (biz 800/100, small 300/30), the
sidebar switcher, the debugger's compare mode (both evidence lists marked both / only A / only B, each lookup
timed) and the chunk preview's compare mode (both chunkings' cuts aligned by offset and marked)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import REPO, AppServer, _chromium_or_skip, start_app, stop_app
from tests.e2e.helpers import open_page, press_slider, wait_idle

pytestmark = pytest.mark.e2e
FILES = [REPO / "examples/kb/runbooks/disk_full.md", REPO / "examples/kb/runbooks/cpu_high.md"]
QUERY = "How do I free disk space?"


@pytest.fixture(scope="module")
def kb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """An app over two knowledge bases with the same two runbooks: biz (the default, 800/100) and small (300/30),
    made in this process before the server opens the database."""
    _chromium_or_skip()
    from rag_core.bootstrap import knowledge_bases
    from rag_core.config import load_settings

    data_dir = Path(tmp_path_factory.mktemp("e2e-kbs"))
    with knowledge_bases(load_settings(data_dir=data_dir, env={})) as kbs:
        kbs.create("small", {"chunk.max-size": 300, "chunk.overlap": 30})
        for name in ("biz", "small"):
            wb = kbs.open(name)
            try:
                assert all(r.status == "added" for r in wb.ingestor.ingest_paths(FILES))
            finally:
                wb.close()
    server = start_app(data_dir)
    yield server
    stop_app(server)


def metric(page: Page, label: str) -> str:
    box = page.get_by_test_id("stMetric").filter(has=page.get_by_text(label, exact=True))
    return box.get_by_test_id("stMetricValue").inner_text()


def test_debugger_compares_two_knowledge_bases_and_the_switcher_changes_side_a(page: Page, kb_server) -> None:
    open_page(page, kb_server.url, f"debugger?q={QUERY}&compare=true&kb_b=small", heading="🔎 Retrieval debugger")
    expect(page.get_by_role("heading", name="A · biz")).to_be_visible()
    expect(page.get_by_role("heading", name="B · small")).to_be_visible()
    expect(page.get_by_text("chunks at 800/100").first).to_be_visible()  # different chunking: matched by text
    for side in "AB":  # each lookup's own time
        assert float(metric(page, f"{side} lookup ms")) > 0
    expect(page.locator('.compared-block[data-mark="both"]').first).to_be_visible()

    # B returns up to 20 blocks of 300 characters, more text than A's 4 blocks of 800 can hold: some only B
    press_slider(page, "B: max chunks per document", "End")
    wait_idle(page)
    press_slider(page, "B: return-n", "End")
    expect(page.get_by_text("B: return-n (50) is larger than retrieve-k")).to_be_visible()
    wait_idle(page)
    only_b = page.locator('.compared-block[data-mark="only B"]')
    expect(only_b.first).to_be_visible()
    expect(only_b.first.locator(".mark-badge", has_text="only B")).to_be_visible()
    summary = page.locator(".compare-summary").inner_text()
    assert re.search(rf"only B\s*{only_b.count()}\b", summary), summary  # the count is the rows marked
    expect(page.locator(".compared-evidence")).to_have_count(2)  # both lists, side by side

    # the sidebar switcher: side A is now small (and B, still small, the same knowledge base)
    page.get_by_test_id("stSidebar").get_by_test_id("stSelectbox").click()
    page.get_by_role("option", name="small").click()
    expect(page.get_by_role("heading", name="A · small")).to_be_visible(timeout=60_000)
    wait_idle(page)
    assert "kb=small" in page.url


def test_chunk_preview_compares_the_two_knowledge_bases_chunkings(page: Page, kb_server) -> None:
    open_page(page, kb_server.url, "chunk_preview", heading="✂️ Chunk preview")
    page.get_by_text("Compare with a second configuration (B)").click()
    table = page.locator(".aligned-chunkings")
    expect(table).to_be_visible(timeout=60_000)
    wait_idle(page)
    # A is biz's chunking (the selected knowledge base), B starts from small's
    expect(page.get_by_text("A chunks (800/100)")).to_be_visible()
    expect(page.get_by_text("B chunks (300/30)")).to_be_visible()
    assert int(metric(page, "B chunks (300/30)")) > int(metric(page, "A chunks (800/100)"))
    both, only_b = int(metric(page, "Cuts in both")), int(metric(page, "Cuts only in B"))
    assert both > 0 and only_b > 0
    assert table.locator('tr[data-mark="both"]').count() == both
    assert table.locator('tr[data-mark="only B"]').count() == only_b
    expect(table.locator('tr[data-mark="only B"] .mark-badge').first).to_be_visible()

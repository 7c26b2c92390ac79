"""The workbench in a real browser: upload, chunk preview, retrieval debugger."""

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import start_app, stop_app
from tests.e2e.helpers import open_page, press_slider, slider_value, wait_idle

pytestmark = pytest.mark.e2e


def grid_cell(page, text: str):
    """A cell of an st.dataframe (a canvas grid; its cells are mirrored in an accessibility table)."""
    return page.locator('[data-testid="stDataFrame"] td', has_text=text)


def test_a_page_url_opened_first_gets_the_full_app(page, tmp_path):
    # A bookmarked page URL can be the first request a fresh server sees (see ui/__init__.py).
    server = start_app(tmp_path)
    try:
        open_page(page, server.url, "debugger?q=disk%20full", heading="🔎 Retrieval debugger")
        nav = page.get_by_test_id("stSidebarNav")
        expect(nav.get_by_text("Retrieval debugger")).to_be_visible()
        expect(nav.get_by_text("Agent chat")).to_be_visible()
        expect(nav.get_by_text("app", exact=True)).to_have_count(0)
        expect(page.get_by_role("textbox", name="Query")).to_have_value("disk full")
        expect(page.get_by_text("The knowledge base is empty")).to_be_visible()
    finally:
        stop_app(server)


def test_upload_two_documents_and_see_them_listed(page, app_server, tmp_path):
    alpha = tmp_path / "e2e_alpha.md"
    alpha.write_text("# Alpha\n\nThe alpha service restarts nightly. 夜间自动重启。\n", encoding="utf-8")
    beta = tmp_path / "e2e_beta.txt"
    beta.write_text("Beta notes: rotate the keys every 90 days.\n", encoding="utf-8")
    open_page(page, app_server.url, "knowledge_base", heading="📚 Knowledge base")

    page.get_by_test_id("stFileUploaderDropzoneInput").set_input_files([alpha, beta])
    expect(page.get_by_text("e2e_beta.txt").first).to_be_visible()
    folder = page.get_by_role("textbox", name="Folder inside the knowledge base (optional)")
    folder.fill("notes")
    folder.press("Enter")
    expect(page.get_by_text("notes/e2e_alpha.md")).to_be_visible()
    wait_idle(page)
    page.get_by_role("button", name="Ingest 2 files").click()

    expect(page.get_by_text("Ingest finished: 2 added.")).to_be_visible(timeout=60_000)
    wait_idle(page)
    expect(grid_cell(page, "notes/e2e_alpha.md").first).to_be_attached()
    expect(grid_cell(page, "notes/e2e_beta.txt").first).to_be_attached()
    expect(page.get_by_text(re.compile(r"^4 documents, \d+ chunks"))).to_be_visible()


def test_chunk_preview_highlights_overlap_after_moving_the_slider(page, app_server):
    open_page(page, app_server.url, "chunk_preview", heading="✂️ Chunk preview")
    expect(page.locator(".chunked-doc")).to_be_visible()

    press_slider(page, "Overlap (characters)", "Home")
    expect(page.get_by_test_id("stSlider").filter(has_text="Overlap").get_by_test_id("stSliderThumbValue")).to_have_text("0")
    wait_idle(page)
    expect(page.locator(".chunked-doc mark.overlap")).to_have_count(0)
    expect(page.get_by_text(re.compile(r"^0 of \d+"))).to_be_visible()

    press_slider(page, "Overlap (characters)", *["ArrowRight"] * 15)
    expect(page.get_by_test_id("stSlider").filter(has_text="Overlap").get_by_test_id("stSliderThumbValue")).to_have_text("150")
    wait_idle(page)
    marks = page.locator(".chunked-doc mark.overlap")
    expect(marks.first).to_be_visible()
    assert marks.count() >= 3
    assert slider_value(page, "Overlap (characters)") == "150"
    background = marks.first.evaluate("e => getComputedStyle(e).backgroundColor")
    assert background == "rgb(255, 209, 102)"  # the overlap colour, distinct from both chunk colours
    expect(page.locator(".chunked-doc .chunk-start").first).to_be_visible()
    marks.first.scroll_into_view_if_needed()


def test_debugger_shows_raw_hits_and_capped_evidence(page, app_server):
    open_page(page, app_server.url, "debugger?q=CPU%20usage%20high&return_n=4&max_chunks_per_document=1",
              heading="🔎 Retrieval debugger")
    expect(page.get_by_role("tab", name="Raw hits (20)")).to_be_visible()
    expect(page.get_by_role("tab", name=re.compile(r"Evidence \([1-4]\)"))).to_be_visible()
    # At 1440 x 900 the results start above the fold: the first hit's row with its whole evidence key, its fate,
    # its channels and its text with the query's words marked, readable without scrolling or a grid.
    page.set_viewport_size({"width": 1440, "height": 900})
    first = page.locator(".hit-row").first
    expect(first).to_be_visible()
    box = first.bounding_box()
    assert box is not None and box["y"] + 60 < 900, box
    assert re.search(r"#1\s.*\S+#chunk-\d+", first.inner_text(), re.S) and "bm25 #" in first.inner_text()
    expect(first.locator("mark").first).to_be_visible()
    assert page.locator(".hit-row").count() == 20
    page.set_viewport_size({"width": 1440, "height": 1400})
    # the grid is one click away; the cap keeps one chunk of the CPU runbook
    page.get_by_role("tab", name="Table").click()
    expect(grid_cell(page, "cpu_high.md#chunk-").first).to_be_attached()
    page.get_by_role("tab", name="Scores and timings").click()
    cap = page.get_by_test_id("stMetric").filter(has_text="Per-document cap").get_by_test_id("stMetricValue")
    assert int(cap.inner_text()) > 0
    dropped = page.get_by_test_id("stExpander").filter(has_text=re.compile(r"Why \d+ hits were dropped"))
    dropped.get_by_text(re.compile(r"Why \d+ hits were dropped")).click()
    expect(dropped.get_by_text(re.compile(r"per-document cap: cpu_high\.md already has 1")).first).to_be_visible()

    # a new query from the box runs at once and lands in the URL
    box = page.get_by_role("textbox", name="Query")
    box.fill("disk full cleanup")
    box.press("Enter")
    expect(page).to_have_url(re.compile(r"q=disk"), timeout=30_000)
    wait_idle(page)
    page.get_by_role("tab", name="Raw hits (20)").click()
    expect(page.locator(".hit-row").filter(has_text="disk_full.md#chunk-").first).to_be_visible()

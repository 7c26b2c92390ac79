"""The Evaluation page in a real browser (app.py navigation, a Streamlit server, Chromium): upload a set
with a query that must fail, run it, see tables and charts, and open that query's debugger link."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.helpers import open_page, wait_idle
from ui.lookup import debugger_url

pytestmark = pytest.mark.e2e

FAILING = "What is the weather on Mars?"


def test_upload_run_and_open_a_failed_query_in_the_debugger(page, app_server, tmp_path: Path) -> None:
    queries = tmp_path / "mine.jsonl"
    queries.write_text(
        '{"query": "When does HighCPUUsageCritical fire?", "relevant": ["runbooks/cpu_high.md"], "answer": "95%"}\n'
        f'{{"query": "{FAILING}", "relevant": ["nowhere.md"]}}\n', encoding="utf-8")
    open_page(page, app_server.url, "evaluation", heading="📏 Evaluation")
    page.get_by_text("Upload a set").click()
    wait_idle(page)
    page.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(queries)
    expect(page.get_by_text("mine.jsonl")).to_be_visible()
    wait_idle(page)
    expect(page.get_by_text("2 queries, 1 parameter combination(s)")).to_be_visible()
    page.get_by_role("button", name="Run evaluation").click()
    expect(page.get_by_text(re.compile(r"^Done in .* saved to "))).to_be_visible(timeout=120_000)
    wait_idle(page, timeout=60_000)
    expect(page.get_by_role("heading", name="Failed queries (1 of 2)")).to_be_visible()
    expect(page.get_by_text("relevant document(s) not in the corpus: nowhere.md")).to_be_visible()
    expect(page.locator(".js-plotly-plot").first).to_be_visible()
    expect(page.locator('[data-testid="stDataFrame"] td', has_text=FAILING).first).to_be_attached()

    # The link the failed-queries table carries opens the debugger with the query and parameters filled in.
    link = debugger_url(FAILING, {"retrieve_k": 20, "return_n": 5, "max_chunks_per_document": 2, "mode": "hybrid"})
    open_page(page, app_server.url, link, heading="🔎 Retrieval debugger")
    expect(page.get_by_role("textbox", name="Query")).to_have_value(FAILING)


def generate_four(page, app_server) -> None:
    """The Test sets tab with an offline set of four items from the seeded knowledge base under review."""
    open_page(page, app_server.url, "evaluation", heading="📏 Evaluation")
    page.get_by_role("tab", name="Test sets").click()
    size = page.get_by_role("spinbutton", name="Size")
    size.fill("4")
    size.press("Enter")
    wait_idle(page)
    page.get_by_role("button", name="Generate", exact=True).click()
    expect(page.get_by_role("heading", name="Review (4 items from biz)")).to_be_visible(timeout=60_000)
    wait_idle(page)


def test_generate_drop_an_item_save_and_evaluate_the_set(page, app_server) -> None:
    """The Test sets tab: an offline set from the seeded knowledge base, one item dropped, saved under a name,
    then run from the set picker (the dropped item left out)."""
    generate_four(page, app_server)
    expect(page.get_by_text("unreviewed 4").first).to_be_visible()
    page.get_by_role("button", name="Drop", exact=True).click()
    expect(page.get_by_text(re.compile(r"unreviewed 3 · accepted 0 · edited 0 · dropped 1"))).to_be_visible()
    wait_idle(page)
    name = page.get_by_role("textbox", name="Save as")
    name.fill("e2e-set")
    name.press("Enter")
    wait_idle(page)
    page.get_by_role("button", name="Save test set").click()
    expect(page.get_by_text("Saved 4 items as e2e-set")).to_be_visible()

    page.get_by_role("tab", name="Run", exact=True).click()
    page.get_by_text("Saved test set", exact=True).click()
    expect(page.get_by_text("3 queries on 1 knowledge base(s)")).to_be_visible()
    wait_idle(page)
    page.get_by_role("button", name="Run evaluation").click()
    expect(page.get_by_text(re.compile(r"^Done in .* saved to "))).to_be_visible(timeout=120_000)
    expect(page.get_by_text(re.compile(r"^e2e-set — 3 queries"))).to_be_visible()


EDITED = "How much free space must the node keep?"


def edit_second_question(page, text: str) -> None:
    """Types `text` over the second row's question (g002) in the review grid, a canvas: a double click on its cell
    opens the grid's editor (rows are 35 px high, under a header row as high; the query column begins at about a
    quarter of the width). The gesture is tried again when the editor did not open on that cell, did not take every
    key or the grid did not take the edit (a busy machine's browser can drop them); the edit, once in the grid, must
    then be kept."""
    grid = page.locator('[data-testid="stDataFrame"]').filter(has=page.locator("td", has_text="g001")).first
    before = grid.locator("tr", has=page.locator("td", has_text="g002")).locator("td").nth(3).inner_text()
    editor = page.locator("textarea.gdg-input")
    for _ in range(3):
        wait_idle(page)
        box = grid.bounding_box()
        assert box is not None
        page.mouse.dblclick(box["x"] + box["width"] * 0.3, box["y"] + 35 * 2 + 17)
        expect(editor).to_be_visible()
        if editor.input_value() == before:
            editor.press("ControlOrMeta+a")
            editor.press_sequentially(text)
            if editor.input_value() == text:
                editor.press("Enter")
                wait_idle(page)
                try:  # the grid took the edit (its mirror shows it): from here a lost edit fails the test
                    expect(grid.locator("td", has_text=text).first).to_be_attached(timeout=15_000)
                    return
                except AssertionError:
                    continue  # the browser dropped the Enter: the grid never had the edit
        editor.press("Escape")
    raise AssertionError(f"the review grid's editor did not open on g002's question ({before!r}) and take the text")


def test_a_review_edit_survives_another_page_and_the_other_language(page, app_server) -> None:
    """A question edited in the review table (a canvas grid: typed into with the keyboard), then another page, back,
    and Chinese: the edit is still in the table, its item counted as edited; the source chunk shows its text as it
    is (code fences and quotes, not escapes)."""
    generate_four(page, app_server)
    chunk = page.locator(".source-chunk")
    expect(chunk).to_be_visible()
    assert "&#x27;" not in chunk.inner_text() and "&quot;" not in chunk.inner_text()

    edit_second_question(page, EDITED)
    expect(page.get_by_text(re.compile(r"unreviewed 3 · accepted 0 · edited 1 · dropped 0"))).to_be_visible()
    cell = page.locator('[data-testid="stDataFrame"] td', has_text=EDITED)  # the grid's mirror of its data
    expect(cell.first).to_be_attached(timeout=30_000)

    nav = page.get_by_test_id("stSidebarNav")
    nav.get_by_role("link", name="Home").click()
    expect(page.get_by_role("heading", name="🧰 RAG workbench")).to_be_visible(timeout=30_000)
    wait_idle(page)
    nav.get_by_role("link", name="Evaluation").click()
    expect(page.get_by_role("heading", name="📏 Evaluation")).to_be_visible(timeout=30_000)
    page.get_by_role("tab", name="Test sets").click()
    wait_idle(page)
    expect(cell.first).to_be_attached(timeout=30_000)
    expect(page.get_by_text(re.compile(r"unreviewed 3 · accepted 0 · edited 1 · dropped 0"))).to_be_visible()

    page.get_by_test_id("stSidebar").get_by_role("radio", name="zh").click()
    expect(page.get_by_role("heading", name="📏 评测")).to_be_visible(timeout=30_000)
    wait_idle(page)
    page.get_by_role("tab", name="测试集").click()
    expect(cell.first).to_be_attached(timeout=30_000)
    expect(page.get_by_text(re.compile("已编辑 1")).first).to_be_visible()

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

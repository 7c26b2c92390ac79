"""Chunk edits from the retrieval debugger in a real browser: a disabled chunk becomes a drop with reason
`disabled` (and comes back when enabled); a keyword given to a chunk brings it to the top for that keyword. The
app's knowledge base is shared by the e2e tests, so the edit is reverted afterwards (by the CLI, through the app's
store host)."""

import json
import subprocess
import sys

import pytest
from playwright.sync_api import expect

from tests.e2e.helpers import open_page, wait_idle
from tests.helpers import wait_until

pytestmark = pytest.mark.e2e


def metric(page, label: str):
    return page.get_by_test_id("stMetric").filter(has_text=label).get_by_test_id("stMetricValue")


def cli(app_server, *argv: str) -> str:
    done = subprocess.run([sys.executable, "-m", "rag_core", "--data-dir", str(app_server.data_dir),
                           "--set", "milvus.lite-mode=shared", *argv],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def found_by_the_cli(app_server, word: str) -> list:
    return json.loads(cli(app_server, "search", word, "--mode", "bm25", "--json"))["raw_hits"]


def test_disable_a_chunk_then_edit_one_and_see_its_new_rank(page, app_server):
    open_page(page, app_server.url, "debugger?q=disk%20full%20cleanup&mode=bm25", heading="🔎 Retrieval debugger")
    expect(metric(page, "Disabled")).to_have_text("0", timeout=30_000)  # the first lookup of a loaded machine
    page.get_by_text("Edit, disable or enable a chunk").click()
    page.get_by_role("button", name="Disable", exact=True).click()
    expect(metric(page, "Disabled")).to_have_text("1", timeout=30_000)
    wait_idle(page)
    page.get_by_text("hits were dropped").click()
    expect(page.get_by_text("— disabled").first).to_be_visible()
    page.get_by_role("button", name="Enable", exact=True).click()
    expect(metric(page, "Disabled")).to_have_text("0", timeout=30_000)
    wait_idle(page)

    page.get_by_label("Keywords (comma-separated; they count for BM25 and the embedding)").fill("xylofrobnik")
    page.get_by_role("button", name="Save the edit").click()
    wait_idle(page)
    try:
        # The page shows nothing when an edit is saved, and wait_idle may look before the click's rerun began: wait
        # until the store has the edit (through the app's store host), so the next page is not opened before it.
        assert wait_until(lambda: found_by_the_cli(app_server, "xylofrobnik"), timeout=120), "the edit was not saved"
        open_page(page, app_server.url, "debugger?q=xylofrobnik&mode=bm25&return_n=1",
                  heading="🔎 Retrieval debugger")
        expect(metric(page, "Raw hits")).to_have_text("1", timeout=30_000)  # only the edited chunk has the word
        expect(metric(page, "Evidence blocks")).to_have_text("1")
    finally:
        found = found_by_the_cli(app_server, "xylofrobnik")
        for key in {h["evidence_key"] for h in found if h["edited"]}:
            cli(app_server, "chunks", "revert", key)

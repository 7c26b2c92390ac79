"""Disabling a chunk from the retrieval debugger in a real browser: it becomes a drop with reason `disabled`, and
enabling it brings it back (the app's knowledge base is shared by the e2e tests, so it is left as found)."""

import pytest
from playwright.sync_api import expect

from tests.e2e.helpers import open_page, wait_idle

pytestmark = pytest.mark.e2e


def disabled_count(page) -> str:
    metric = page.get_by_test_id("stMetric").filter(has_text="Disabled")
    return metric.get_by_test_id("stMetricValue").inner_text()


def test_a_chunk_disabled_in_the_debugger_is_dropped_as_disabled(page, app_server):
    open_page(page, app_server.url, "debugger?q=disk%20full%20cleanup", heading="🔎 Retrieval debugger")
    assert disabled_count(page) == "0"
    page.get_by_text("Edit, disable or enable a chunk").click()
    page.get_by_role("button", name="Disable", exact=True).click()
    expect(page.get_by_test_id("stMetric").filter(has_text="Disabled").get_by_test_id("stMetricValue")) \
        .to_have_text("1", timeout=30_000)
    wait_idle(page)
    page.get_by_text("hits were dropped").click()
    expect(page.get_by_text("— disabled").first).to_be_visible()
    page.get_by_role("button", name="Enable", exact=True).click()
    expect(page.get_by_test_id("stMetric").filter(has_text="Disabled").get_by_test_id("stMetricValue")) \
        .to_have_text("0", timeout=30_000)
    wait_idle(page)

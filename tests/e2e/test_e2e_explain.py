""""Why wasn't it retrieved?" in a real browser: a URL names the expected document (as the Evaluation
page's failed-query links do), the panel explains, and its link applies the smallest change."""

import pytest
from playwright.sync_api import expect

from tests.e2e.helpers import open_page, wait_idle

pytestmark = pytest.mark.e2e


def test_the_fix_link_brings_the_expected_document_into_the_evidence(page, app_server):
    open_page(page, app_server.url, "debugger?q=disk%20full%20cleanup&retrieve_k=2&return_n=1&expect=cpu_high.md",
              heading="🔎 Retrieval debugger")
    expect(page.get_by_text("cpu_high.md is not in the evidence")).to_be_visible()
    apply = page.get_by_role("link", name="Apply")
    expect(apply).to_be_visible()
    apply.click()
    expect(page.get_by_text("cpu_high.md is in the evidence")).to_be_visible(timeout=60_000)
    wait_idle(page)
    assert "expect=cpu_high.md" in page.url

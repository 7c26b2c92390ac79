"""The debugger's Context view in a real browser at a normal width (1280 x 800), in English and in Chinese: with
`expand=parent` from the URL the blocks show grown, their matched chunks marked, the token bar under the tabs, and
nothing makes the page scroll sideways, the context controls opened included. The screenshots go to a temporary
folder (looked at when the test was written; never committed)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import AppServer
from tests.e2e.helpers import open_page, wait_idle

pytestmark = pytest.mark.e2e
URL = "debugger?q=CPU%20usage%20high%20alert&expand=parent"
# Whether anything is wider than its box: the document, and Streamlit's main area (which scrolls on its own).
OVERFLOW = """() => {
  const boxes = [document.documentElement, document.querySelector('[data-testid="stMain"]'),
                 document.querySelector('[data-testid="stMainBlockContainer"]')].filter(Boolean);
  return boxes.map(e => [e.getAttribute('data-testid') || e.tagName, e.scrollWidth, e.clientWidth])
              .filter(([, scroll, client]) => scroll > client + 1);
}"""


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_the_context_view_at_1280_px_has_no_sideways_scroll(browser, app_server: AppServer, tmp_path, locale):
    context = browser.new_context(viewport={"width": 1280, "height": 800}, locale=locale)
    context.set_default_timeout(30_000)
    page = context.new_page()
    try:
        open_page(page, app_server.url, URL)
        expect(page.locator(".hit-row").first).to_be_visible(timeout=60_000)
        # the context controls, one click away: the expansion chosen by the URL
        controls = page.get_by_test_id("stExpander").nth(2)  # after "Previous turns" and the filters'
        controls.locator("summary").click()
        expect(controls.get_by_role("radio", name="parent")).to_have_attribute("aria-checked", "true")
        wait_idle(page)
        assert page.evaluate(OVERFLOW) == []
        page.screenshot(path=str(tmp_path / f"context_controls_{locale}.png"))

        page.get_by_role("tab").nth(2).click()  # Raw hits, Evidence, Context
        blocks = page.locator(".context-block")
        expect(blocks.first).to_be_visible()
        expect(page.locator(".context-budget")).to_be_visible()
        assert blocks.first.get_attribute("data-grew") == "parent"
        expect(blocks.first.locator("mark.matched").first).to_be_visible()
        assert "qwen" in page.locator(".context-budget").inner_text()
        assert page.evaluate(OVERFLOW) == []
        box = blocks.first.bounding_box()
        main = page.get_by_test_id("stMainBlockContainer").bounding_box()
        assert box is not None and main is not None and box["x"] + box["width"] <= main["x"] + main["width"] + 1
        page.get_by_role("tab").nth(2).scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / f"context_blocks_{locale}.png"))
    finally:
        context.close()

"""Small Playwright helpers for Streamlit pages (see /work/shared/notes/streamlit-testing.md)."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Locator, Page, expect

SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"
IDLE = ('[data-testid="stApp"][data-test-script-state="notRunning"]'
        '[data-test-connection-state="CONNECTED"]')


def wait_idle(page: Page, timeout: float = 30_000) -> None:
    """Wait until the script finished and nothing on the page is stale."""
    page.wait_for_timeout(150)  # the state attribute lags the action by ~100 ms
    page.locator(IDLE).wait_for(timeout=timeout)
    expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0, timeout=timeout)
    expect(page.locator('[data-stale="true"]')).to_have_count(0, timeout=timeout)


def open_page(page: Page, base_url: str, path: str = "", heading: str | None = None) -> None:
    page.goto(f"{base_url}/{path}")
    if heading:
        expect(page.get_by_role("heading", name=heading)).to_be_visible(timeout=60_000)
    wait_idle(page, timeout=60_000)


def slider(page: Page, label: str) -> Locator:
    return page.get_by_test_id("stSlider").filter(has_text=label)


def slider_value(page: Page, label: str) -> str:
    return slider(page, label).get_by_test_id("stSliderThumbValue").inner_text()


def press_slider(page: Page, label: str, *keys: str) -> None:
    """Move a slider with the keyboard (fill() would move the thumb without rerunning the app)."""
    thumb = slider(page, label).get_by_role("slider")
    thumb.focus()
    for key in keys:
        thumb.press(key)


def shot(page: Page, name: str) -> Path:
    SCREENSHOTS.mkdir(exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path

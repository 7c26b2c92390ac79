"""The app in Chinese in a real browser (CJK fonts: fonts-noto-cjk): a Chromium whose language is zh-CN gets the
Chinese app without `?lang=`; the chat page answers a question, its lookup replays in the retrieval debugger, and
the switcher there changes the language keeping the debugger's query in the URL, the page links carrying it.
The screenshots go to a temporary folder (looked at when the test was written; never committed)."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from tests.e2e.conftest import AppServer
from tests.e2e.helpers import open_page, wait_idle

pytestmark = pytest.mark.e2e
NAV_ZH = ["首页", "知识库", "分块预览", "召回调试", "智能体对话", "评测", "失败案例"]


def query(url: str) -> dict[str, list[str]]:
    return parse_qs(urlparse(url).query)


def test_chat_and_debugger_in_chinese_from_the_browser_language(browser, app_server: AppServer, tmp_path):
    context = browser.new_context(viewport={"width": 1440, "height": 1100}, locale="zh-CN")
    context.set_default_timeout(30_000)
    page = context.new_page()
    try:
        open_page(page, app_server.url, "chat", heading="💬 智能体对话")
        nav = page.get_by_test_id("stSidebarNav")
        for title in NAV_ZH:
            expect(nav.get_by_role("link", name=title)).to_be_visible()
        sidebar = page.get_by_test_id("stSidebar")
        expect(sidebar.get_by_role("radio", name="zh")).to_have_attribute("aria-checked", "true")
        expect(page.get_by_text("离线模式：回答直接引用知识库原文")).to_be_visible()
        box = page.get_by_test_id("stChatInputTextArea")
        expect(box).to_have_attribute("placeholder", "询问运维手册、告警、制度…")
        box.fill("节点磁盘满了怎么释放空间？")
        box.press("Enter")
        status = page.get_by_test_id("stExpander").filter(has_text="检索了知识库").last  # a rerun may hold the old one
        expect(status).to_contain_text(re.compile(r"\d+ 条证据"), timeout=60_000)
        expect(page.get_by_test_id("stPopover").filter(has_text="disk_full.md").first).to_be_visible(timeout=60_000)
        wait_idle(page)
        expect(page.get_by_text("来源：")).to_be_visible()
        page.screenshot(path=str(tmp_path / "chat_zh.png"), full_page=True)

        replay = status.get_by_role("link", name="在召回调试中重放这次检索")
        if not replay.is_visible():
            status.get_by_text("检索了知识库").click()
            wait_idle(page)
        for _ in range(3):  # a click a busy browser drops while the chat page redraws is given again
            replay.click()
            try:
                page.wait_for_url(re.compile(r"/debugger\?"), timeout=20_000)
                break
            except PlaywrightTimeout:
                wait_idle(page)
        expect(page.get_by_role("heading", name=re.compile("^🔎"))).to_be_visible(timeout=60_000)
        expect(page.locator(".hit-row").first).to_be_visible(timeout=60_000)
        wait_idle(page, timeout=60_000)
        for title in NAV_ZH:  # the debugger's body is translated on its own; the navigation and sidebar are here
            expect(nav.get_by_role("link", name=title)).to_be_visible()
        expect(page.get_by_test_id("stSidebarUserContent").get_by_text("知识库", exact=True)).to_be_visible()
        page.screenshot(path=str(tmp_path / "debugger_zh.png"), full_page=True)
        asked = query(page.url)["q"]

        # the switcher: English, the query kept in the URL; a page link carries the language
        sidebar.get_by_role("radio", name="en").click()
        expect(nav.get_by_role("link", name="Agent chat")).to_be_visible(timeout=30_000)
        wait_idle(page)
        assert query(page.url)["lang"] == ["en"] and query(page.url)["q"] == asked
        nav.get_by_role("link", name="Home").click()
        expect(page.get_by_role("heading", name="🧰 RAG workbench")).to_be_visible(timeout=30_000)
        assert query(page.url)["lang"] == ["en"]
    finally:
        context.close()

"""Agent chat in a real browser: offline mode with a citation, and a model behind a local
OpenAI-compatible server (the real `openai` SDK) streaming its answer after a visible tool call."""

import json
import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect

from tests.e2e.conftest import SEED_FILES, seed, start_app, stop_app
from tests.e2e.helpers import open_page, shot, wait_idle
from tests.e2e.slow_chat import SlowOpenAIChatServer
from tests.servers.chat import Completion, tool_call

pytestmark = pytest.mark.e2e


def ask(page, question: str) -> None:
    box = page.get_by_test_id("stChatInputTextArea")
    box.fill(question)
    box.press("Enter")


def test_offline_chat_answers_with_a_citation(page, app_server):
    # start in the debugger with another query, then go to the chat within the same browser session
    open_page(page, app_server.url, "debugger?q=old%20query", heading="🔎 Retrieval debugger")
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Agent chat").click()
    expect(page.get_by_role("heading", name="💬 Agent chat")).to_be_visible()
    wait_idle(page)
    expect(page.get_by_text("Offline mode: answers quote the knowledge base")).to_be_visible()
    ask(page, "How do I free disk space when a node disk is full?")

    status = page.get_by_test_id("stExpander").filter(has_text="Searched the knowledge base").last  # a rerun may
    expect(status).to_be_visible(timeout=60_000)  # still show the old one beside it on a busy machine
    chip = page.get_by_test_id("stPopover").filter(has_text=re.compile(r"disk_full\.md#chunk-\d+")).first
    expect(chip).to_be_visible(timeout=60_000)
    wait_idle(page)
    answer = page.get_by_test_id("stChatMessage").last
    expect(answer).to_contain_text(re.compile(r"\[disk_full\.md#chunk-\d+\]"))

    chip.get_by_role("button").click()  # the chip opens the cited chunk
    card = page.locator('[data-testid="stPopoverBody"] .chunk-card')
    expect(card).to_be_visible()
    expect(card).to_contain_text("disk_full.md")
    shot(page, "chat_offline_citation")
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("stPopoverBody")).to_be_hidden()  # else the next click only closes it
    wait_idle(page)  # a click during a rerun can be lost

    # the tool call's lookup replays in the debugger
    replay = status.get_by_role("link", name=re.compile("Replay this lookup"))
    if not replay.is_visible():
        status.get_by_text("Searched the knowledge base").click()
        wait_idle(page)
    replay.click()
    expect(page.get_by_role("heading", name="🔎 Retrieval debugger")).to_be_visible(timeout=30_000)
    expect(page.get_by_role("textbox", name="Query")).to_have_value(
        "How do I free disk space when a node disk is full?"
    )
    expect(page.get_by_role("tab", name=re.compile(r"Raw hits \(\d+\)"))).to_be_visible(timeout=60_000)
    expect(page.locator(".hit-row").filter(has_text="disk_full.md#chunk-").first).to_be_visible()


def test_a_follow_up_replays_in_the_debugger_with_the_turns_before_it(page, app_server):
    # a follow-up asked in the chat opens in the debugger with the conversation before it: both questions shown
    open_page(page, app_server.url, "chat", heading="💬 Agent chat")
    statuses = page.get_by_test_id("stExpander").filter(has_text="Searched the knowledge base")
    ask(page, "How do I free disk space when a node disk is full?")
    expect(statuses).to_have_count(1, timeout=60_000)
    wait_idle(page)
    ask(page, "What is the first step?")
    expect(statuses).to_have_count(2, timeout=60_000)
    wait_idle(page)
    follow_up = statuses.last
    replay = follow_up.get_by_role("link", name=re.compile("Replay this lookup"))
    for attempt in range(3):  # a rerun that ends meanwhile may draw the status block closed again: open it again
        if not replay.is_visible():
            follow_up.get_by_text("Searched the knowledge base").click()
            wait_idle(page)
        try:
            replay.click(timeout=20_000)
            break
        except PlaywrightTimeoutError:
            if attempt == 2:
                raise
    expect(page.get_by_role("heading", name="🔎 Retrieval debugger")).to_be_visible(timeout=30_000)
    expect(page.get_by_role("textbox", name="Query")).to_have_value("What is the first step?", timeout=60_000)
    box = page.get_by_role("textbox", name="Previous turns")
    expect(box).to_have_value(re.compile(r"^user: How do I free disk space when a node disk is full\?\nassistant: "
                                         r".*\[(runbooks/)?disk_full\.md#chunk-\d+\]", re.S), timeout=60_000)
    questions = page.get_by_test_id("stMarkdownContainer").filter(has_text="Searched:")
    expect(questions).to_contain_text("Asked: What is the first step?", timeout=60_000)
    expect(questions).to_contain_text("Searched: What is the first step? (free disk space node full; Runbook: Disk "
                                      "Space Low")
    expect(page.get_by_text(re.compile("rewritten offline: borrowed “free”, “disk”"))).to_be_visible()
    expect(page.locator(".hit-row").filter(has_text="disk_full.md#chunk-").first).to_be_visible()
    wait_idle(page)
    shot(page, "debugger_follow_up")


@pytest.fixture(scope="module")
def model_app(tmp_path_factory):
    """A second app whose chat model is a local OpenAI-compatible server that streams slowly."""
    with SlowOpenAIChatServer(api_key="sk-chat-test", gap=0.25) as chat:
        data_dir = tmp_path_factory.mktemp("e2e-model")
        seed(data_dir, SEED_FILES[1:])
        server = start_app(data_dir, {"RAG_CHAT_PROVIDER": "openai", "RAG_CHAT_BASE_URL": chat.base_url,
                                      "RAG_CHAT_MODEL": "test-chat", "OPENAI_API_KEY": "sk-chat-test"})
        try:
            yield server, chat
        finally:
            stop_app(server)


def cite_first(request) -> Completion:
    tool = [m for m in request.json["messages"] if m["role"] == "tool"][-1]
    key = json.loads(tool["content"])["results"][0]["document_id"]
    return Completion.say(f"First, find what fills the disk with du and clean the systemd journal [{key}]. "
                          "Never delete anything under /var/lib/mysql. That is the whole procedure.", parts=8)


def test_model_chat_streams_after_a_visible_tool_call(browser, model_app, request):
    server, chat = model_app
    chat.reply(Completion.calls(tool_call("search_knowledge_base", {"query": "disk full cleanup"}, parts=3)),
               cite_first)
    context = browser.new_context(viewport={"width": 1440, "height": 1400})
    page = context.new_page()
    try:
        open_page(page, server.url, "chat", heading="💬 Agent chat")
        expect(page.get_by_text("test-chat via")).to_be_visible()
        ask(page, "The disk on node-7 is full. What do I do?")

        searched = "Searched the knowledge base: “disk full cleanup”"
        status = page.get_by_test_id("stExpander").filter(has_text=searched).last
        expect(status).to_be_visible(timeout=60_000)
        # the answer grows on the page while it streams
        answer = page.get_by_test_id("stChatMessage").last
        seen: list[str] = []
        final = "That is the whole procedure."
        for _ in range(400):
            text = answer.inner_text()
            if not seen or text != seen[-1]:
                seen.append(text)
            if final in text and "▌" not in text:
                break
            page.wait_for_timeout(25)
        partial = [t for t in seen if "First, find" in t and final not in t]
        assert partial, f"never saw a partial answer: {seen}"
        expect(page.get_by_test_id("stPopover").filter(has_text="disk_full.md#chunk-")).to_be_visible()
        wait_idle(page)

        status.get_by_text("Searched the knowledge base").click()
        expect(status.get_by_text('"disk full cleanup"')).to_be_visible()  # the arguments
        requests = chat.chat_requests()
        assert len(requests) == 2 and requests[1]["messages"][-1]["role"] == "tool"
    finally:
        shot(page, request.node.name)
        context.close()

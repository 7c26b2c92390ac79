"""The HTTP service in a real browser: a page on another origin that talks to /api the way SuperBizAgent's front
end does (fetch + ReadableStream, `data:` lines of {"type": content|error|done}) shows an answer streamed by
our server from a chat model behind the slow OpenAI-compatible server. Exercises CORS for real too."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from playwright.sync_api import expect

from rag_core.service.app import create_app
from tests.e2e.conftest import REPO, SEED_FILES
from tests.e2e.helpers import SCREENSHOTS
from tests.e2e.slow_chat import SlowOpenAIChatServer
from tests.helpers import indexed_workbench
from tests.servers.chat import Completion, tool_call
from tests.service import live

pytestmark = pytest.mark.e2e

KEY = "sk-e2e-service-7c1d"

# The parsing below follows SuperBizAgent's app.js (sendStreamMessage): split the decoded bytes on "\n", keep
# the unfinished last line, read `data:` lines as JSON, act on content/done/error, ignore other types.
PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>SuperBizAgent-style client</title></head>
<body>
<input id="question" value="磁盘满了怎么处理？" size="60"><button id="send">发送</button>
<div id="status">idle</div><div id="answer" style="white-space: pre-wrap"></div><div id="stats"></div>
<script>
const API = new URLSearchParams(location.search).get("api") + "/api";
document.getElementById("send").onclick = async () => {
  const status = document.getElementById("status"), answer = document.getElementById("answer");
  status.textContent = "streaming"; answer.textContent = "";
  const times = []; let full = "";
  try {
    const response = await fetch(`${API}/chat_stream`, {method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify({Id: "browser-session", Question: document.getElementById("question").value})});
    if (!response.ok) throw new Error(`HTTP错误: ${response.status}`);
    const reader = response.body.getReader(); const decoder = new TextDecoder(); let buffer = "";
    outer: while (true) {
      const {done, value} = await reader.read();
      if (done) { status.textContent = "closed"; break; }
      buffer += decoder.decode(value, {stream: true});
      const lines = buffer.split("\\n"); buffer = lines.pop() || "";
      for (const line of lines) {
        if (line.trim() === "" || !line.startsWith("data:")) continue;
        const msg = JSON.parse(line.substring(5).trim());
        if (msg.type === "content") {
          full += msg.data || ""; times.push(performance.now()); answer.textContent = full;
        }
        else if (msg.type === "done") { status.textContent = "done"; break outer; }
        else if (msg.type === "error") {
          answer.textContent = "错误: " + (msg.data || "未知错误"); status.textContent = "error"; break outer;
        }
      }
    }
  } catch (e) { status.textContent = "failed: " + e.message; }
  document.getElementById("stats").textContent = JSON.stringify({count: times.length,
    span: times.length ? times[times.length - 1] - times[0] : 0});
};
</script></body></html>
"""


class PageServer:
    """Serves PAGE on its own loopback origin (so the browser's calls to the API are cross-origin)."""

    def __enter__(self) -> PageServer:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                body = PAGE.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def setup(browser, tmp_path_factory: pytest.TempPathFactory, local_embedder) -> Iterator[tuple[Any, ...]]:
    wb = indexed_workbench(tmp_path_factory.mktemp("e2e-service"), local_embedder, [REPO / f for f in SEED_FILES])
    with PageServer() as page_server, SlowOpenAIChatServer(api_key=KEY, gap=0.25) as model:
        settings = wb.settings.with_overrides({"chat.provider": "openai", "chat.base-url": model.base_url,
                                               "chat.model": "test-chat", "chat.max-retries": 0,
                                               "api.cors-origins": page_server.url})
        server = live.start(create_app(dataclasses.replace(wb, settings=settings), env={"OPENAI_API_KEY": KEY},
                                       close_workbench=False))
        try:
            yield page_server, model, server
        finally:
            server.stop()
    wb.close()


def open_client(browser, page_server: PageServer, api: str):  # noqa: ANN201
    context = browser.new_context(locale="zh-CN")
    context.set_default_timeout(30_000)
    page = context.new_page()
    page.goto(f"{page_server.url}/?api={api}")
    return context, page


def test_a_superbizagent_style_page_shows_the_streamed_answer(browser, setup):
    page_server, model, server = setup
    model.reset()
    answer = "先确认是哪个挂载点满了，然后清理旧日志和临时文件，最后检查增长趋势。[runbooks/disk_full.md#chunk-1]"
    model.reply(Completion.calls(tool_call("search_knowledge_base", {"query": "磁盘满"})),
                Completion.say(answer, parts=8))
    context, page = open_client(browser, page_server, server.url)
    try:
        page.click("#send")
        expect(page.locator("#status")).to_have_text("streaming")
        expect(page.locator("#answer")).not_to_be_empty(timeout=30_000)
        partial = page.locator("#answer").inner_text()
        expect(page.locator("#status")).to_have_text("done", timeout=30_000)
        assert page.locator("#answer").inner_text() == answer
        assert partial and answer.startswith(partial)  # it grew from a prefix: streamed, not one block
        stats = json.loads(page.locator("#stats").inner_text())
        assert stats["count"] == 8 and stats["span"] >= 1000  # 8 pieces, 0.25 s apart on the wire
        SCREENSHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "service_stream_page.png"))
    finally:
        context.close()
    info = server.service.sessions.get("default_user", "browser-session")
    assert info is not None and info.snapshot()[-1].answer == answer


def test_the_page_shows_an_error_event(browser, setup):
    page_server, model, server = setup
    model.reset()
    model.reply(model.server_error(500))
    context, page = open_client(browser, page_server, server.url)
    try:
        page.click("#send")
        expect(page.locator("#status")).to_have_text("error", timeout=30_000)
        expect(page.locator("#answer")).to_contain_text("错误: ")
        assert KEY not in page.content()
    finally:
        context.close()


def test_the_openapi_page_renders_without_internet(browser, setup):
    """/docs draws every route with Swagger UI files served by the service itself (no CDN on this machine)."""
    _, _, server = setup
    context = browser.new_context()
    page = context.new_page()
    failed: list[str] = []
    page.on("requestfailed", lambda request: failed.append(request.url))
    try:
        page.goto(f"{server.url}/docs")
        expect(page.get_by_text("/api/chat_stream", exact=True)).to_be_visible(timeout=30_000)
        expect(page.get_by_text("/v1/search", exact=True)).to_be_visible()
        assert not failed
    finally:
        context.close()


UPLOAD = """async (url) => {
  const form = new FormData();
  form.append("file", new Blob(["# Planted\\n\\nA page on another site put this here."], {type: "text/markdown"}),
              "planted.md");
  try { const r = await fetch(url, {method: "POST", body: form, mode: url.startsWith("/") ? "same-origin" : "no-cors"});
        return r.status; } catch (e) { return "failed: " + e.message; }
}"""


def test_a_page_on_another_site_cannot_upload_but_the_servers_own_page_can(browser, setup):
    """The attack of issue 21: a page posts a multipart form to the local API (a simple request: no preflight, so CORS
    does not stop it). The browser says where it comes from; the server refuses it. /docs (the server's own
    origin) still may."""
    page_server, _, server = setup
    context = browser.new_context()
    page = context.new_page()

    def doc_ids() -> list[str]:
        return [d.doc_id for d in server.service.workbench.store.list_documents()]

    try:
        # the same page under another name: an origin that is not in api.cors-origins
        page.goto(page_server.url.replace("127.0.0.1", "localhost") + "/")
        assert page.evaluate(UPLOAD, f"{server.url}/api/upload") == 0  # opaque: the page learns nothing
        assert "planted.md" not in doc_ids()
        page.goto(f"{server.url}/docs")
        assert page.evaluate(UPLOAD, "/api/upload") == 200
        assert "planted.md" in doc_ids()
    finally:
        context.close()
        if "planted.md" in doc_ids():
            server.service.workbench.ingestor.delete("planted.md")

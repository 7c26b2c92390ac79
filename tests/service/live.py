"""A real uvicorn serving an app on a free loopback port, in a thread of the test process (so the app can share
the test's open workbench: Milvus Lite allows one process per database file)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import uvicorn


@dataclass
class LiveServer:
    app: Any
    url: str
    server: uvicorn.Server
    thread: threading.Thread

    @property
    def service(self) -> Any:
        return self.app.state.service

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)

    def wait_streams_closed(self, timeout: float = 15.0) -> int:
        """Wait until no streamed turn is running; returns the count left (0 = all closed)."""
        deadline = time.monotonic() + timeout
        while self.service.streams.active and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.service.streams.active


def run_async(coroutine: Any) -> Any:
    """`asyncio.run(coroutine)` on a thread of its own: in the full suite the e2e tests' session browser
    (Playwright's sync API) keeps an event loop running on the main thread, where asyncio.run refuses."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def start(app: Any, timeout: float = 20.0) -> LiveServer:
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on",
                            timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="uvicorn-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    return LiveServer(app, f"http://127.0.0.1:{port}", server, thread)


def clients(server: LiveServer) -> Iterator[httpx.Client]:
    """For fixtures: `yield from live.clients(server)`."""
    with httpx.Client(base_url=server.url, timeout=60) as client:
        yield client


def error_message(r: httpx.Response) -> str:
    """The one line an error answer says (service.errors)."""
    return str(r.json()["error"]["message"])


def sse_events(response: httpx.Response) -> Iterator[dict[str, Any]]:
    """Parse a text/event-stream response the way SuperBizAgent's front end does: line by line, `data:` lines
    hold one JSON object each; blank lines separate events."""
    for line in response.iter_lines():
        if not line.strip() or line.startswith(":"):  # blank lines end events; ":" lines are comments
            continue
        assert line.startswith("data: "), f"not an SSE data line: {line!r}"
        yield json.loads(line[len("data: "):])


def stream(client: httpx.Client, path: str, body: dict[str, Any] | None = None, **kw: Any) -> list[dict[str, Any]]:
    with client.stream("POST", path, json=body, **kw) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        return list(sse_events(response))


def content_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["data"] for e in events if e["type"] == "content")

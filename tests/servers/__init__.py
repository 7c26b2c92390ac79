"""Local HTTP servers that speak real remote protocols, for tests that drive the real SDKs.

`FakeServer` is the generic part: a threaded stdlib server on 127.0.0.1 (port 0), a log of every
request, and a script of canned replies (`script(...)` for the next requests, `always(...)` for all of
them) that take precedence over the protocol handler a subclass implements in `handle()`.

    with DashScopeEmbeddingServer() as server:
        server.script(Reply.json(429, {...}), Reply.json(429, {...}))   # then normal answers
        ...
        assert server.requests[0].json["input"]["texts"] == [...]

Each server is also a pytest fixture away: `yield from FakeServer.serve()` or use it as a context
manager.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

__all__ = ["FakeServer", "RecordedRequest", "Reply"]


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: Mapping[str, str]  # keys lower-cased
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8")) if self.body else None

    def header(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name.lower(), default)


@dataclass(frozen=True)
class Reply:
    """One canned HTTP answer. `delay` seconds pass before anything is sent (for client timeouts).

    `parts`: the body sent in pieces, each after its own pause: `((pause, bytes), ...)`; the headers
    (with the full Content-Length) go out at once. For servers that drip bytes or keep a stream alive
    with SSE comments; see `drip` and `keepalives`.
    """

    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    parts: tuple[tuple[float, bytes], ...] = ()

    @classmethod
    def drip(cls, reply: Reply, every: float = 1.0) -> Reply:
        """`reply`, sent one byte every `every` seconds."""
        body = reply.body
        return cls(reply.status, body, reply.headers, reply.delay,
                   tuple((every if i else 0.0, body[i:i + 1]) for i in range(len(body))))

    @classmethod
    def keepalives(cls, count: int, every: float = 0.2, *, then: bytes = b"") -> Reply:
        """An SSE stream of `count` comment lines (`: keep-alive`), `every` seconds apart, then `then`
        (raw SSE text; nothing by default: the stream ends without a single event)."""
        parts = tuple((every if i else 0.0, b": keep-alive\n\n") for i in range(count))
        if then:
            parts += ((every, then),)
        return cls(200, b"".join(p for _, p in parts), {"Content-Type": "text/event-stream"}, 0.0, parts)

    @classmethod
    def json(cls, status: int, payload: Any, *, headers: Mapping[str, str] | None = None,
             delay: float = 0.0) -> Reply:
        hdrs = {"Content-Type": "application/json", **(headers or {})}
        return cls(status, json.dumps(payload, ensure_ascii=False).encode("utf-8"), hdrs, delay)

    @classmethod
    def text(cls, status: int, text: str, *, delay: float = 0.0) -> Reply:
        return cls(status, text.encode("utf-8"), {"Content-Type": "text/plain; charset=utf-8"}, delay)


Responder = Reply | Callable[[RecordedRequest], Reply]


class FakeServer:
    """Threaded HTTP server on 127.0.0.1; subclasses implement `handle(request) -> Reply`."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._script: list[Responder] = []
        self._always: Responder | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- protocol (override) -------------------------------------------------------------------
    def handle(self, request: RecordedRequest) -> Reply:
        return Reply.json(404, {"error": f"no handler for {request.method} {request.path}"})

    # -- scripting ------------------------------------------------------------------------------
    def script(self, *replies: Responder) -> Self:
        """Answer the next len(replies) requests with these, in order; then the protocol handler."""
        with self._lock:
            self._script.extend(replies)
        return self

    def always(self, reply: Responder | None) -> Self:
        """Answer every request with `reply` (None restores the protocol handler)."""
        with self._lock:
            self._always = reply
        return self

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self._script.clear()
            self._always = None

    def _respond(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            responder = self._script.pop(0) if self._script else self._always
        if responder is None:
            return self.handle(request)
        return responder(request) if callable(responder) else responder

    # -- lifecycle ------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        """http://127.0.0.1:<port> (no trailing slash)."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Self:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs' pooled sessions expect
            disable_nagle_algorithm = True  # headers and body go in two writes: no 40 ms delayed-ACK stall

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                request = RecordedRequest(
                    method=self.command,
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
                reply = server._respond(request)
                if reply.delay and server._stopping.wait(reply.delay):
                    return
                try:
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    for pause, piece in reply.parts or ((0.0, reply.body),):
                        if pause and server._stopping.wait(pause):
                            return
                        self.wfile.write(piece)
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its timeout); nothing to report

            do_GET = do_POST = do_PUT = do_DELETE = _serve

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that hung up mid-request is normal in timeout tests

        self._stopping.clear()
        self._httpd = Server(("127.0.0.1", 0), Handler)
        # stop() waits for serve_forever's next poll: 10 ms, not 50, since tests start and stop ~200 of these
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01},
                                        name=f"{type(self).__name__}:{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping on a delayed reply
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def serve(self) -> Iterator[Self]:
        """For fixtures: `yield from SomeServer().serve()`."""
        with self:
            yield self

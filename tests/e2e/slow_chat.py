"""The fake OpenAI-compatible chat server, streaming one SSE event at a time.

`tests.servers.chat.OpenAIChatServer` writes a whole event stream at once, which a browser cannot tell
apart from a non-streamed answer. This subclass sends the same bytes event by event, `gap` seconds
apart, so an end-to-end test can watch the answer grow on the page.

`hold()` makes the answers wait, before their first byte, until `release()`: a test that needs turns to be waiting
for their model at the same moment holds them there, instead of hoping that a slow answer lasts long enough.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.servers import RecordedRequest
from tests.servers.chat import OpenAIChatServer


class SlowOpenAIChatServer(OpenAIChatServer):
    def __init__(self, *args: Any, gap: float = 0.3, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gap = gap
        self.finished: list[bool] = []  # per answered request: all of it written (False: the client hung up)
        self._flowing = threading.Event()
        self._flowing.set()

    def hold(self) -> None:
        """Requests from now on are recorded, then their answers wait (before any byte) until `release()`."""
        self._flowing.clear()

    def release(self) -> None:
        self._flowing.set()

    def start(self) -> SlowOpenAIChatServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - stdlib name
                length = int(self.headers.get("Content-Length") or 0)
                request = RecordedRequest(self.command, self.path, {k.lower(): v for k, v in self.headers.items()},
                                          self.rfile.read(length) if length else b"")
                reply = server._respond(request)
                while not server._flowing.wait(0.05):  # held
                    if server._stopping.is_set():
                        return
                streamed = reply.headers.get("Content-Type", "").startswith("text/event-stream")
                pieces = [e + b"\n\n" for e in reply.body.split(b"\n\n") if e] if streamed else [reply.body]
                try:
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(sum(len(p) for p in pieces)))
                    self.end_headers()
                    for piece in pieces:
                        self.wfile.write(piece)
                        self.wfile.flush()
                        if streamed and server._stopping.wait(server.gap):
                            return
                    server.finished.append(True)
                except (BrokenPipeError, ConnectionResetError):
                    server.finished.append(False)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 128  # socketserver's 5 resets connections when dozens of turns start at once

        self._stopping.clear()
        self._httpd = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"SlowOpenAIChatServer:{self.port}", daemon=True)
        self._thread.start()
        return self


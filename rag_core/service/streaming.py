"""Agent events as server-sent events, pulled from a blocking iterator without blocking the event loop.

Wire format (SuperBizAgent's): one JSON object per event on a single `data:` line, then a blank line:

    data: {"type": "content", "data": "<piece of the answer>"}
    data: {"type": "error", "data": "<message for the person>", "kind": "<what failed>"}
    data: {"type": "done", "data": null}

Clients that know only content/error/done ignore the other types, which carry the rest of the turn with
the same fields as `python -m rag_core chat --json`: `session`, `tool_call`, `tool_result` (the full lookup
for knowledge-base calls), `notice` and `citations` (just before `done`). Every stream the server finishes
ends with `done`, also after an `error`.

The agent is a blocking generator (model HTTP calls, embedding, Milvus). `EventPump` advances it one
event at a time in a worker thread; when the client goes away, `stop()` closes the generator (from the
worker thread if it is busy, as soon as its current step returns), which closes the model's HTTP stream and
ends the turn: nothing more is computed for a reader who left. A step that takes long is covered by
`: keep-alive` comment lines every 15 s. `collect` does the same for a turn answered all at once (`/api/chat`):
it watches the connection while the steps run, and stops the turn when the client leaves.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
from starlette.types import Receive

from ..agent.events import ContentEvent, DoneEvent, ErrorEvent, Event
from ..errors import for_client

log = logging.getLogger(__name__)

_END = object()
KEEPALIVE_S = 15.0
KEEPALIVE = b": keep-alive\n\n"


def frame(payload: dict[str, Any]) -> bytes:
    # json.dumps escapes newlines inside strings, so one event is always one `data:` line.
    return b"data: " + json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8") + b"\n\n"


def payloads(event: Event) -> list[dict[str, Any]]:
    """The SSE messages of one agent event."""
    if isinstance(event, ContentEvent):
        return [{"type": "content", "data": event.text}]
    if isinstance(event, ErrorEvent):
        return [{"type": "error", "data": for_client(event.message), "kind": event.kind},
                {"type": "done", "data": None}]
    body = event.to_dict()
    body.pop("type", None)
    if isinstance(event, DoneEvent):
        body.pop("text", None)  # the client has it from the content events
        return [{"type": "citations", "data": body}, {"type": "done", "data": None}]
    return [{"type": event.type, "data": body}]


class EventPump:
    """Advances a blocking iterator one item per call; `stop()` never blocks and closes it exactly once."""

    def __init__(self, events: Iterator[Any]) -> None:
        self._events = events
        self._lock = threading.Lock()
        self._stopping = False
        self._closed = False

    def next(self) -> Any:
        with self._lock:
            if self._closed:
                return _END
            try:
                return next(self._events)
            except StopIteration:
                self._closed = True
                return _END
            finally:
                if self._stopping:
                    self._close()

    def stop(self) -> None:
        self._stopping = True
        if self._lock.acquire(blocking=False):  # else the worker closes it when its step returns
            try:
                self._close()
            finally:
                self._lock.release()

    def _close(self) -> None:
        if not self._closed:
            self._closed = True
            close = getattr(self._events, "close", None)
            if close is not None:
                close()


FAILURE = {"type": "error", "data": "An unexpected error ended this stream; the details are in the server log.",
           "kind": "internal"}
DONE = frame({"type": "done", "data": None})


async def sse(events: Iterator[Event], first: list[dict[str, Any]] | None = None,
              on_open: Callable[[], None] = lambda: None, on_close: Callable[[], None] = lambda: None,
              keepalive: float = KEEPALIVE_S, limiter: anyio.CapacityLimiter | None = None,
              encode: Callable[[Event], list[dict[str, Any]]] = payloads, failure: dict[str, Any] = FAILURE,
              closing: bytes = DONE) -> AsyncIterator[bytes]:
    """The response body of a streamed turn. Cancelled (client gone) -> the turn is stopped. While a step
    takes longer than `keepalive` seconds (a slow model, a long search), a comment line goes out, so proxies
    that close idle connections keep this one: SSE clients, SuperBizAgent's front end included, skip it.

    `limiter`: the threads the steps run in. A step can wait for the model for a minute; on the default pool
    (40 threads, shared with every other route) 40 open streams would make searches wait behind them.

    `encode`, `failure`, `closing`: the wire format (default SuperBizAgent's): an event's messages, the message a
    bug ends the stream with, and the last frame of a stream that did not end itself (a `done` message).
    /v1/chat/completions gives OpenAI's (openai_compat.py)."""
    pump = EventPump(events)
    ended = False
    step: asyncio.Future[Any] | None = None
    on_open()
    try:
        for payload in first or []:
            yield frame(payload)
        while True:
            step = asyncio.ensure_future(anyio.to_thread.run_sync(pump.next, limiter=limiter))
            while not step.done():
                await asyncio.wait({step}, timeout=keepalive)
                if not step.done():
                    yield KEEPALIVE
            event, step = step.result(), None
            if event is _END:
                break
            for payload in encode(event):
                ended = ended or payload.get("type") == "done"
                yield frame(payload)
    except Exception:  # a bug: the person gets a plain message, the log the trace
        log.exception("streaming a turn failed")
        if not ended:
            yield frame(failure)
    finally:
        pump.stop()
        if step is not None:  # the client left during a step: it finishes in its thread, then the pump closes
            step.add_done_callback(lambda done: done.cancelled() or done.exception())
        on_close()
    if not ended:
        yield closing


class ClientGone(Exception):
    """The client disconnected before the turn ended (the turn was stopped)."""


async def collect(events: Iterator[Any], receive: Receive, limiter: anyio.CapacityLimiter) -> list[Any]:
    """Every item of a blocking iterator (a whole turn), advanced one step at a time in `limiter`'s threads. When
    the client disconnects meanwhile (`receive`, the request's, says `http.disconnect`), the turn is stopped as a
    stream's is (closed when its current step returns: the model's HTTP stream closes, no further step runs, and
    an agent turn that did not finish is not recorded) and ClientGone is raised."""
    pump = EventPump(events)
    gone = asyncio.ensure_future(_disconnect(receive))
    step: asyncio.Future[Any] | None = None
    items: list[Any] = []
    try:
        while True:
            step = asyncio.ensure_future(anyio.to_thread.run_sync(pump.next, limiter=limiter))
            await asyncio.wait({step, gone}, return_when=asyncio.FIRST_COMPLETED)
            if gone.done():
                raise ClientGone
            item, step = step.result(), None
            if item is _END:
                return items
            items.append(item)
    finally:
        pump.stop()
        gone.cancel()
        if step is not None:  # it finishes in its thread (holding its limiter token), then the pump closes
            step.add_done_callback(lambda done: done.cancelled() or done.exception())


async def _disconnect(receive: Receive) -> None:
    """Returns when the client has gone. The body was read before the route ran, so what the server sends next
    is `http.disconnect` (uvicorn: when the connection closes, or once the response is complete)."""
    while (await receive())["type"] != "http.disconnect":
        pass

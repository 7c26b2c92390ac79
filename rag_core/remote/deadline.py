"""Deadlines that hold whatever the server does.

SDK timeouts are per socket read: a server that sends one byte per second never trips one, and a
streamed answer kept alive by SSE comments never ends. So each attempt runs in a worker thread and the
caller waits for it with a deadline of its own (`run_within`, `stream_within`): the caller gets
`DeadlineExceeded` on time, whatever the SDK is doing. The worker is then told to stop (`stop_requested`),
which our own readers check between chunks; an SDK busy reading a body stops at its own read timeout or
when the server stops sending, in the background, without holding anyone up.
"""

from __future__ import annotations

import contextvars
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from typing import TypeVar

T = TypeVar("T")

_local = threading.local()


class DeadlineExceeded(Exception):
    """An attempt ran out of time. phase: "attempt" (a whole call), "first" (no first piece of a streamed
    answer), "idle" (a streamed answer went silent), "total" (the caller's overall deadline passed)."""

    def __init__(self, seconds: float, phase: str = "attempt") -> None:
        super().__init__(f"no answer within {seconds:g} s ({phase})")
        self.seconds = seconds
        self.phase = phase


def stop_requested() -> bool:
    """True in a worker whose caller has given up on it (readers check this between chunks)."""
    event = getattr(_local, "stop", None)
    return event is not None and event.is_set()


def _start(target: Callable[[threading.Event], None]) -> threading.Event:
    stop = threading.Event()
    # The caller's context goes with the call: its trace (rag_core.tracing) is the worker's, so a request made
    # here is a span of the same turn, not the root of a trace of its own.
    context = contextvars.copy_context()

    def work() -> None:
        _local.stop = stop
        target(stop)

    # A daemon thread: an abandoned attempt must never keep the process from exiting.
    threading.Thread(target=context.run, args=(work,), name="rag-remote-call", daemon=True).start()
    return stop


def run_within(fn: Callable[[], T], seconds: float) -> T:
    """`fn()` run in a worker thread: its result or exception, or `DeadlineExceeded` after `seconds`."""
    box: Future[T] = Future()

    def target(_: threading.Event) -> None:
        try:
            box.set_result(fn())
        except BaseException as exc:  # noqa: BLE001 - handed to the caller as is
            box.set_exception(exc)

    stop = _start(target)
    try:
        return box.result(timeout=seconds)
    except TimeoutError:
        if box.done():  # finished in the same instant
            return box.result()
        stop.set()
        raise DeadlineExceeded(seconds, "attempt") from None


_ITEM, _END, _ERROR = range(3)


def stream_within(open_stream: Callable[[], Iterable[T]], *, first: float, idle: float,
                  until: float | None = None, clock: Callable[[], float] = time.monotonic) -> Iterator[T]:
    """The items of `open_stream()`, read by a worker thread, yielded as they arrive.

    `DeadlineExceeded` when the first item takes longer than `first` seconds (phase "first"), a later one
    longer than `idle` after the previous (phase "idle"), or the clock passes `until` (phase "total").
    Closing this generator (the consumer stops early) tells the worker to stop too.
    """
    items: queue.Queue[tuple[int, object]] = queue.Queue()

    def target(stop: threading.Event) -> None:
        try:
            stream = open_stream()
            try:
                for item in stream:
                    items.put((_ITEM, item))
                    if stop.is_set():
                        break
            finally:
                close = getattr(stream, "close", None)
                if close is not None:
                    close()
            items.put((_END, None))
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer as is
            items.put((_ERROR, exc))

    stop = _start(target)
    got_one = False
    try:
        while True:
            wait, phase = (idle, "idle") if got_one else (first, "first")
            if until is not None and until - clock() < wait:
                wait, phase = until - clock(), "total"
            try:
                kind, value = items.get(timeout=max(0.0, wait))
            except queue.Empty:
                seconds = (idle if got_one else first) if phase != "total" else wait
                raise DeadlineExceeded(seconds, phase) from None
            if kind == _END:
                return
            if kind == _ERROR:
                assert isinstance(value, BaseException)
                raise value
            got_one = True
            yield value  # type: ignore[misc]
    finally:
        stop.set()

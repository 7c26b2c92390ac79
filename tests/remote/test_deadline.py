"""Deadlines held in the caller's thread, whatever the worker is doing."""

from __future__ import annotations

import threading
import time

import pytest

from rag_core.remote import DeadlineExceeded, run_within, stop_requested, stream_within


def test_run_within_returns_the_result_or_the_exception() -> None:
    assert run_within(lambda: 42, 5) == 42
    with pytest.raises(KeyError):
        run_within(lambda: {}["x"], 5)


def test_run_within_gives_up_on_time_and_tells_the_worker() -> None:
    stopped = threading.Event()

    def slow() -> None:
        while not stop_requested():  # what our readers do between chunks
            time.sleep(0.01)
        stopped.set()

    with pytest.raises(DeadlineExceeded) as info:  # the worker never ends by itself: only the deadline ends the wait
        run_within(slow, 0.2)
    assert (info.value.phase, info.value.seconds) == ("attempt", 0.2)
    assert stopped.wait(5)  # the worker noticed and ended


def ticks(count: int, every: float, first: float = 0.0):
    def open_stream():
        time.sleep(first)
        for i in range(count):
            if i:
                time.sleep(every)
            yield i
    return open_stream


def test_stream_within_yields_items_as_they_come() -> None:
    assert list(stream_within(ticks(3, 0.01), first=5, idle=5)) == [0, 1, 2]


@pytest.mark.parametrize("stream, first, idle, until, phase, got", [
    (ticks(3, 0.0, first=10), 0.2, 5, None, "first", []),   # no first piece in time
    (ticks(3, 10), 5, 0.2, None, "idle", [0]),                # went silent after the first piece
    (ticks(100, 0.05), 5, 5, 0.4, "total", None),            # steady, but the overall deadline passed
])
def test_stream_within_deadlines(stream, first, idle, until, phase, got) -> None:
    # Each stream lasts far longer than the deadline it meets (10 s, 10 s, 5 s), so the phase says which one ended it.
    received = []
    with pytest.raises(DeadlineExceeded) as info:
        for item in stream_within(stream, first=first, idle=idle,
                                  until=None if until is None else time.monotonic() + until):
            received.append(item)
    assert info.value.phase == phase
    if got is not None:
        assert received == got


def test_closing_the_stream_early_stops_the_worker() -> None:
    closed = threading.Event()

    class Endless:
        def __iter__(self):
            while True:
                time.sleep(0.01)
                yield 1

        def close(self) -> None:
            closed.set()

    stream = stream_within(Endless, first=5, idle=5)
    assert next(stream) == 1
    stream.close()
    assert closed.wait(5)


def test_stream_within_hands_over_the_workers_exception() -> None:
    def broken():
        yield 1
        raise ValueError("bad chunk")

    stream = stream_within(broken, first=5, idle=5)
    assert next(stream) == 1
    with pytest.raises(ValueError, match="bad chunk"):
        next(stream)

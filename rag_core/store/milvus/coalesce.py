"""Concurrent searches of one shape share one Milvus request.

Milvus searches several vectors (or texts) in one request, and each one's hits are exactly those of a search
of it alone: same ids, same scores, same order (tests/store/milvus/test_coalesce.py checks it on dense and BM25). What
a request costs beyond its queries is then paid once per batch: the gRPC round trip in both processes, the
plan and the result message. (Milvus Lite's FLAT scan itself is paid mostly per query: a batch of 8 costs
several single searches.) bench/api.py measures what it saves (Milvus Lite's CPU and this process's per
lookup) and what it changes for latency under load: its in-process rows, coalesced against not.

How: a caller whose shape has no batch running starts one at once with itself and whoever queued, so a lone
lookup never waits. Callers arriving while a batch runs queue; when it ends, the first of them runs the next
batch with every caller queued by then. A failed batch of several is run again one caller at a time, so an
error reaches only the caller it belongs to.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")

MAX_BATCH = 16  # callers per batch: beyond the lookups a service runs at once; Milvus stays exact far beyond


@dataclass
class _Caller(Generic[T, R]):
    item: T
    done: bool = False
    result: Any = None
    error: BaseException | None = None


@dataclass
class _Shape:
    queue: list[_Caller] = field(default_factory=list)
    running: bool = False


class Coalescer(Generic[T, R]):
    """`coalescer(key, item)` returns `run(key, [item, ...])[i]` for its own item, run in a batch with the items
    of concurrent callers of the same key. `run` returns one result per item, in order. Thread-safe."""

    def __init__(self, run: Callable[[Hashable, list[T]], list[R]], max_batch: int = MAX_BATCH) -> None:
        self._run = run
        self._max_batch = max_batch
        self._shapes: dict[Hashable, _Shape] = {}
        self._cond = threading.Condition()

    def __call__(self, key: Hashable, item: T) -> R:
        me: _Caller[T, R] = _Caller(item)
        with self._cond:
            shape = self._shapes.setdefault(key, _Shape())
            shape.queue.append(me)
            while not me.done and (shape.running or shape.queue[0] is not me):
                self._cond.wait()
            lead = not me.done  # first in the queue and nothing running: run the next batch
            if lead:
                batch, shape.queue[:] = shape.queue[:self._max_batch], shape.queue[self._max_batch:]
                shape.running = True
        if lead:
            self._lead(key, shape, batch)
        if me.error is not None:
            raise me.error
        return me.result

    def _lead(self, key: Hashable, shape: _Shape, batch: list[_Caller[T, R]]) -> None:
        try:
            try:
                results = self._run(key, [caller.item for caller in batch])
                for caller, result in zip(batch, results, strict=True):
                    caller.result = result
            except Exception as exc:
                if len(batch) == 1:
                    batch[0].error = exc
                else:
                    for caller in batch:
                        try:
                            caller.result = self._run(key, [caller.item])[0]
                        except Exception as own:
                            caller.error = own
        except BaseException as exc:  # interrupted: nobody may wait forever
            for caller in batch:
                if caller.result is None and caller.error is None:
                    caller.error = exc
            raise
        finally:
            with self._cond:
                for caller in batch:
                    caller.done = True
                shape.running = False
                if not shape.queue:
                    self._shapes.pop(key, None)
                self._cond.notify_all()

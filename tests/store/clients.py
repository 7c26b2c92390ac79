"""A failing client for the store's tests: the real one, with one chosen call failing (or acting first).

MilvusStore's parts (registry, writer, searcher) work through the store's client, so a test that needs a write
to fail at one step sets `store.client = FailingClient(store.client, "insert", around)` instead of patching the
store's methods: every other call, and that one when `around` lets it through, reaches the real Milvus.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class FailingClient:
    """`client` (the store's, connected to the real Milvus), except that each call of its method `method` goes
    through `around(call, *args, **kwargs)`: `call(*args, **kwargs)` is the real call, and `around` may raise
    instead (disk full, a kill, a lost connection), or do something before or after it (another writer's
    commit, killing the server), then return what the real call returned. The store calls the client with the
    collection first: `around(call, collection, rows)` for an insert."""

    def __init__(self, client: Any, method: str, around: Callable[..., Any]) -> None:
        self.real = client
        self._method = method
        self._around = around

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.real, name)
        if name != self._method:
            return attr
        return lambda *args, **kwargs: self._around(attr, *args, **kwargs)


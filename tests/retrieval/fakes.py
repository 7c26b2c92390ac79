"""Test doubles above the search port: a port with fixed hits (counting calls, recording widths) and
a scripted reranker. The in-memory port that passes the full contract is tests.retrieval.memory."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rag_core.records import CLOSED, CircuitState, RerankResult, SearchHit, SearchOptions, SearchResult


class ScriptedPort:
    """Returns the same ranked hits for every query (the first k); records the widths asked for."""

    def __init__(self, hits: Sequence[SearchHit], options: SearchOptions = SearchOptions()) -> None:
        self.hits = list(hits)
        self.options = options
        self.asked: list[int] = []

    @property
    def calls(self) -> int:
        return len(self.asked)

    def configured(self, options: SearchOptions) -> ScriptedPort:
        return self  # the script does not depend on the options; sharing `asked` keeps counts in one place

    def search(self, query: str, k: int, filters: Mapping[str, Any] | None = None) -> SearchResult:
        self.asked.append(k)
        return SearchResult(tuple(self.hits[:k]), {"fake_search": 0.0})


class SpyPort:
    """Wraps a real port and records the widths it was asked for."""

    def __init__(self, inner: Any, asked: list[int] | None = None) -> None:
        self.inner = inner
        self.asked = [] if asked is None else asked

    def configured(self, options: SearchOptions) -> SpyPort:
        return SpyPort(self.inner.configured(options), self.asked)

    def search(self, query: str, k: int, filters: Mapping[str, Any] | None = None) -> SearchResult:
        self.asked.append(k)
        return self.inner.search(query, k, filters)


class ScriptedReranker:
    """Scores documents with `score(query, document)`; can be told to fail. Records every call. (The
    term-overlap fake that matches the loopback rerank servers is tests/fakes/reranker.py.)"""

    def __init__(self, score: Callable[[str, str], float], *, name: str = "fake:scripted",
                 error: Exception | None = None, notes: tuple[str, ...] = ()) -> None:
        self._score = score
        self._name = name
        self.error = error
        self.notes = notes
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    @property
    def name(self) -> str:
        return self._name

    def rerank(self, query: str, documents: Sequence[str]) -> RerankResult:
        self.calls.append((query, tuple(documents)))
        if self.error is not None:
            raise self.error
        return RerankResult(tuple(self._score(query, d) for d in documents), self.notes)

    def state(self) -> CircuitState:
        return CLOSED

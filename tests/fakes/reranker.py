"""A reranker without a service: the share of the query's terms found in each document (the same rule as
the loopback rerank servers), so tests can predict the order."""

from __future__ import annotations

from collections.abc import Sequence

from rag_core.records import CLOSED, CircuitState, RerankResult
from rag_core.rerank.base import check_inputs
from tests.servers.rerank import fake_score


class FakeReranker:
    name = "fake:term-overlap"

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def rerank(self, query: str, documents: Sequence[str]) -> RerankResult:
        docs = check_inputs(query, documents)
        self.calls.append((query, docs))
        return RerankResult(tuple(float(fake_score(query, d)) for d in docs))

    def state(self) -> CircuitState:
        return CLOSED

"""The Milvus adapter of the KnowledgeSearchPort (dense, BM25 or hybrid); the port is in rag_core.ports."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Mapping

from ..ports import ChunkStore, Embedder, KnowledgeSearchPort
from ..errors import RetrievalError
from ..records import SearchHit
from . import fusion

SEARCH_MODES = ("dense", "bm25", "hybrid")
FUSIONS = ("rrf", "weighted")


class Hits(list):  # type: ignore[type-arg]
    """A port's result: a plain list of SearchHit, plus per-stage timings in milliseconds."""

    def __init__(self, hits: list[SearchHit], timings: dict[str, float]) -> None:
        super().__init__(hits)
        self.timings = timings


@dataclass(frozen=True)
class SearchOptions:
    mode: str = "hybrid"
    fusion: str = "weighted"
    rrf_k: int = 60
    dense_weight: float = 0.5
    bm25_weight: float = 1.0

    def __post_init__(self) -> None:
        if self.mode not in SEARCH_MODES:
            raise RetrievalError(f"Unknown search mode {self.mode!r}; use one of {', '.join(SEARCH_MODES)}.")
        if self.fusion not in FUSIONS:
            raise RetrievalError(f"Unknown fusion {self.fusion!r}; use one of {', '.join(FUSIONS)}.")
        if self.rrf_k < 1:
            raise RetrievalError("RRF k must be at least 1.")
        if min(self.dense_weight, self.bm25_weight) < 0 or self.dense_weight + self.bm25_weight <= 0:
            raise RetrievalError("Channel weights must be non-negative and not both zero.")


class MilvusSearchPort:
    """Dense (embedder + COSINE), BM25 (Milvus full-text) or both fused (see fusion.py)."""

    def __init__(self, store: ChunkStore, embedder: Embedder, options: SearchOptions = SearchOptions()) -> None:
        self.store = store
        self.embedder = embedder
        self.options = options

    def configured(self, options: SearchOptions) -> MilvusSearchPort:
        return self if options == self.options else MilvusSearchPort(self.store, self.embedder, options)

    def with_changes(self, **changes: Any) -> MilvusSearchPort:
        return self.configured(replace(self.options, **changes))

    def search(self, query: str, k: int, filters: Mapping[str, Any] | None = None) -> Hits:
        timings: dict[str, float] = {}
        ranked: dict[str, list[SearchHit]] = {}
        mode = self.options.mode
        if mode in ("dense", "hybrid"):
            started = time.perf_counter()
            vector = self.embedder.embed_query(query)
            timings["embed"] = (time.perf_counter() - started) * 1000
            started = time.perf_counter()
            ranked["dense"] = self.store.search_dense(vector, k, filters)
            timings["dense_search"] = (time.perf_counter() - started) * 1000
        if mode in ("bm25", "hybrid"):
            started = time.perf_counter()
            ranked["bm25"] = self.store.search_bm25(query, k, filters)
            timings["bm25_search"] = (time.perf_counter() - started) * 1000
        if mode == "hybrid":
            started = time.perf_counter()
            weights = {"dense": self.options.dense_weight, "bm25": self.options.bm25_weight}
            hits = (fusion.rrf(ranked, weights, self.options.rrf_k, k) if self.options.fusion == "rrf"
                    else fusion.weighted(ranked, weights, k))
            timings["fusion"] = (time.perf_counter() - started) * 1000
        else:
            hits = ranked[mode]
        if not hits and self.store.is_empty():
            raise RetrievalError("The knowledge base is empty: ingest documents first "
                                 "(Knowledge base page, or `python -m rag_core ingest PATH`).")
        return Hits(hits, timings)

"""The KnowledgeSearchPort over one ChunkStore (dense, BM25 or hybrid); the port is in rag_core.ports. Nothing here is
Milvus's: the store does the searching (MilvusStore, or the in-memory store: tests/retrieval/memory.py), this adds
the query's embedding and the fusion of the two channels."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from .. import tracing
from ..errors import EmptyKnowledgeBase
from ..ports import Embedder, KnowledgeSearchPort, KnowledgeStore
from ..records import FUSIONS, SEARCH_MODES, SearchHit, SearchOptions, SearchResult, StoredChunk
from ..tracing import semconv as sc
from . import fusion

__all__ = ["FUSIONS", "SEARCH_MODES", "KnowledgeSearchPort", "SearchOptions", "StoreSearchPort", "fuse"]


def fuse(ranked: Mapping[str, list[SearchHit]], options: SearchOptions, k: int, query: str) -> list[SearchHit]:
    """The top `k` of the channels' ranked lists for `query` fused as `options` say (hybrid mode)."""
    weights = {"dense": options.dense_weight, "bm25": options.bm25_weight}
    stand_in = fusion.cross_language(query, ranked) if options.cross_language else set()
    if options.fusion == "rrf":
        return fusion.rrf(ranked, weights, options.rrf_k, k, stand_in)
    if options.fusion == "dbsf":
        return fusion.dbsf(ranked, weights, k, stand_in)
    return fusion.weighted(ranked, weights, k, stand_in)


class StoreSearchPort:
    """Dense (the embedder's query vector, cosine), BM25 (the store's full-text search) or both fused (see fusion.py)
    over one knowledge base's store: a ports.SingleStoreSearchPort, so the lookup path reads that store's disabled
    chunks and labels."""

    def __init__(self, store: KnowledgeStore, embedder: Embedder, options: SearchOptions = SearchOptions()) -> None:
        self.store = store
        self.embedder = embedder
        self.options = options

    def document_chunks(self, doc_id: str) -> list[StoredChunk]:
        """The document's chunks a lookup may show (ports.DocumentChunksPort): disabled ones left out."""
        chunks = self.store.get_chunks(doc_id)
        off = self.store.disabled_keys(chunks)
        return [c for c in chunks if f"{c.doc_id}#chunk-{c.chunk_index}" not in off]

    def configured(self, options: SearchOptions) -> StoreSearchPort:
        return self if options == self.options else StoreSearchPort(self.store, self.embedder, options)

    def search(self, query: str, k: int, filters: Mapping[str, Any] | None = None) -> SearchResult:
        timings: dict[str, float] = {}
        ranked: dict[str, list[SearchHit]] = {}
        mode = self.options.mode
        if mode in ("dense", "hybrid"):
            started = time.perf_counter()
            with tracing.span("embed", sc.EMBEDDING, {sc.EMBEDDING_MODEL_NAME: self.embedder.name}):
                vector = self.embedder.embed_query(query)
            timings["embed"] = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        with tracing.stage(f"{mode}_search") as span:
            if mode == "dense":
                ranked["dense"] = self.store.search_dense(vector, k, filters)
            elif mode == "bm25":
                ranked["bm25"] = self.store.search_bm25(query, k, filters)
            else:
                # One call for both channels: one view of the active versions judges both lists (a document never
                # shows two versions in one lookup) and the registry is read once, not once per channel.
                ranked["dense"], ranked["bm25"] = self.store.search_both(vector, query, k, filters)
            span.set_attributes({f"{sc.HITS}.{channel}": len(hits) for channel, hits in ranked.items()})
        timings[f"{mode}_search"] = (time.perf_counter() - started) * 1000
        if mode == "hybrid":
            started = time.perf_counter()
            with tracing.stage("fusion"):
                hits = fuse(ranked, self.options, k, query)
            timings["fusion"] = (time.perf_counter() - started) * 1000
        else:
            hits = ranked[mode]
        if not hits and self.store.is_empty():
            raise EmptyKnowledgeBase("The knowledge base is empty: ingest documents first "
                                 "(Knowledge base page, or `python -m rag_core ingest PATH`).")
        return SearchResult(tuple(hits[:k]), timings)

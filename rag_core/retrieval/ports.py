"""The KnowledgeSearchPort over one ChunkStore (dense, BM25 or hybrid); the port is in rag_core.ports. Nothing here is
Milvus's: the store does the searching (MilvusStore, or the in-memory store: tests/retrieval/memory.py), this adds
the query's embedding and the fusion of the two channels."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from .. import tracing
from ..access.groups import NO_RULES, FolderRules, access_filter, access_labels, hides
from ..access.records import UNRESTRICTED, AccessScope
from ..errors import EmptyKnowledgeBase, RetrievalError
from ..identity import doc_id_of
from ..ports import Embedder, KnowledgeSearchPort, KnowledgeStore
from ..records import FUSIONS, SEARCH_MODES, SearchHit, SearchOptions, SearchResult, StoredChunk
from ..tracing import semconv as sc
from . import fusion
from .params import ACCESS

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

    def __init__(self, store: KnowledgeStore, embedder: Embedder, options: SearchOptions = SearchOptions(),
                 folders: FolderRules = NO_RULES) -> None:
        """`folders`: the knowledge base's folder rules of access groups (`access.folders`, access.groups)."""
        self.store = store
        self.embedder = embedder
        self.options = options
        self.folders = folders

    def hides(self, scope: AccessScope, doc_id: str) -> bool:
        """Whether a lookup in `scope` may not retrieve the document (ports.AccessFilteringPort)."""
        return not scope.unrestricted and hides(scope, doc_id, self._labels(), self.folders)

    def _labels(self) -> dict[str, dict[str, tuple[str, ...]]]:
        """The documents' labels with those of front matter being written (access.groups.access_labels)."""
        return access_labels(self.store.labels.all(), self.store.labels.pending())

    def _access(self, filters: Mapping[str, Any] | None) -> tuple[Mapping[str, Any] | None, AccessScope]:
        """`filters` with the lookup's AccessScope (under `access`) made the store's AccessFilter, and the scope."""
        scope = (filters or {}).get(ACCESS, UNRESTRICTED)
        if not isinstance(scope, AccessScope):
            raise RetrievalError(f"The search filter {ACCESS!r} must be an AccessScope, got {type(scope).__name__}.")
        rest = {k: v for k, v in (filters or {}).items() if k != ACCESS} if filters is not None else None
        if scope.unrestricted:
            return rest, scope
        doc_ids = [d.doc_id for d in self.store.list_documents()] if self.folders else []
        return {**(rest or {}), ACCESS: access_filter(scope, self._labels(), self.folders, doc_ids)}, scope

    def document_chunks(self, doc_id: str) -> list[StoredChunk]:
        """The document's chunks a lookup may show (ports.DocumentChunksPort): disabled ones left out."""
        chunks = self.store.get_chunks(doc_id)
        off = self.store.disabled_keys(chunks)
        return [c for c in chunks if f"{c.doc_id}#chunk-{c.chunk_index}" not in off]

    def configured(self, options: SearchOptions) -> StoreSearchPort:
        return self if options == self.options else StoreSearchPort(self.store, self.embedder, options, self.folders)

    def search(self, query: str, k: int, filters: Mapping[str, Any] | None = None) -> SearchResult:
        """`filters` may hold the lookup's AccessScope under `access` (retrieval.params.search_filters): the store
        then filters the rows by it (access.groups.AccessFilter), and for a scope that may know (`reveal`) the same
        search without it counts how many of its hits were of hidden documents (`SearchResult.hidden`)."""
        filters, scope = self._access(filters)
        timings: dict[str, float] = {}
        mode = self.options.mode
        vector = None
        if mode in ("dense", "hybrid"):
            started = time.perf_counter()
            with tracing.span("embed", sc.EMBEDDING, {sc.EMBEDDING_MODEL_NAME: self.embedder.name}):
                vector = self.embedder.embed_query(query)
            timings["embed"] = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        with tracing.stage(f"{mode}_search") as span:
            ranked = self._ranked(vector, query, k, filters)
            span.set_attributes({f"{sc.HITS}.{channel}": len(hits) for channel, hits in ranked.items()})
        timings[f"{mode}_search"] = (time.perf_counter() - started) * 1000
        if mode == "hybrid":
            started = time.perf_counter()
            with tracing.stage("fusion"):
                hits = fuse(ranked, self.options, k, query)
            timings["fusion"] = (time.perf_counter() - started) * 1000
        else:
            hits = ranked[mode]
        if not scope.unrestricted:  # a document labelled or ingested while this search ran: filtered here too
            labels = self._labels()
            hits = [h for h in hits if not hides(scope, doc_id_of(h.metadata or {}) or "", labels, self.folders)]
        hidden = None
        if scope.reveal and not scope.unrestricted:
            started = time.perf_counter()
            with tracing.stage("no_access"):
                hidden = self._hidden(scope, vector, query, k, filters)
            timings["no_access"] = (time.perf_counter() - started) * 1000
        if not hits and self.store.is_empty():
            raise EmptyKnowledgeBase("The knowledge base is empty: ingest documents first "
                                 "(Knowledge base page, or `python -m rag_core ingest PATH`).")
        return SearchResult(tuple(hits[:k]), timings, hidden)

    def _ranked(self, vector: Any, query: str, k: int, filters: Mapping[str, Any] | None
                ) -> dict[str, list[SearchHit]]:
        mode = self.options.mode
        if mode == "dense":
            return {"dense": self.store.search_dense(vector, k, filters)}
        if mode == "bm25":
            return {"bm25": self.store.search_bm25(query, k, filters)}
        # One call for both channels: one view of the active versions judges both lists (a document never shows two
        # versions in one lookup) and the registry is read once, not once per channel.
        dense, bm25 = self.store.search_both(vector, query, k, filters)
        return {"dense": dense, "bm25": bm25}

    def _hidden(self, scope: AccessScope, vector: Any, query: str, k: int, filters: Mapping[str, Any] | None) -> int:
        """How many of the top `k` hits of the same search without the access filter are of documents `scope`
        hides: what the filter removed (drop reason `no_access`), counted, never shown."""
        ranked = self._ranked(vector, query, k, {key: v for key, v in (filters or {}).items() if key != ACCESS})
        hits = fuse(ranked, self.options, k, query) if self.options.mode == "hybrid" else ranked[self.options.mode]
        labels = self._labels()
        return sum(hides(scope, doc_id_of(h.metadata or {}) or "", labels, self.folders) for h in hits[:k])

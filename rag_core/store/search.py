"""Reading chunks back and searching them (dense and BM25), only ever the active version of a document."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..ports import STORE_FILTER_FIELDS, StoreFilters
from ..records import SearchHit, StoredChunk
from . import filters
from .lite_internals import is_empty_bm25_error
from .rows import search_hit
from .schema import CHUNK_FIELDS, QUERY_LIMIT


class SearchMixin:
    """Chunk reads and the two search channels (part of MilvusStore)."""

    client: Any
    collection: str
    _has_rows: bool

    def get_chunks(self, doc_id: str) -> list[StoredChunk]:
        """The active version's chunks of one document, in order.

        A new version committed between the registry read and the chunk query retires the version read
        (its chunks are deleted): the query then finds none, and reading the registry again finds the new
        version, whose chunks were written before its commit. So a reader never sees zero chunks."""
        for _ in range(3):
            row = self._active_row(doc_id)
            if row is None:
                return []
            rows = self.client.query(
                self.collection, filter=filters.all_of(filters.equals("doc_id", doc_id),
                                                       filters.equals("version", row["version"])),
                output_fields=CHUNK_FIELDS, limit=QUERY_LIMIT, consistency_level="Strong")
            if rows:
                break
        return [StoredChunk(**{name: row[name] for name in CHUNK_FIELDS})
                for row in sorted(rows, key=lambda r: r["chunk_index"])]

    def _search(self, channel: str, data: Any, field: str, k: int, expr: str) -> list[SearchHit]:
        """One channel's top-k over active versions, best first, scores higher-is-better.

        The registry is read after the search, so a document whose new version was committed while the
        search ran can show only old-version hits that the registry no longer calls active. Searching
        again then finds the new version (it was written before its commit; reads are Strong), so a
        reader never loses a document to a concurrent re-index."""
        limit, retries = k, 0
        while True:
            result = self.client.search(self.collection, data=[data], anns_field=field, limit=min(limit, QUERY_LIMIT),
                                        filter=expr, output_fields=CHUNK_FIELDS, consistency_level="Strong")[0]
            active = self._active_versions(h["entity"]["doc_id"] for h in result)
            kept = [h for h in result if active.get(h["entity"]["doc_id"]) == h["entity"]["version"]]
            switched = {h["entity"]["doc_id"] for h in result} - {h["entity"]["doc_id"] for h in kept}
            if switched & active.keys() and retries < 2:
                retries += 1
                continue
            if len(kept) >= k or len(result) < limit or limit >= QUERY_LIMIT:
                break
            limit = min(QUERY_LIMIT, limit * 2 + (len(result) - len(kept)))  # stale rows crowded the window
        return [self._hit(h, channel, rank) for rank, h in enumerate(kept[:k], start=1)]

    @staticmethod
    def _hit(raw: Mapping[str, Any], channel: str, rank: int) -> SearchHit:
        entity = raw["entity"]
        chunk = StoredChunk(id=str(raw["id"]), doc_id=entity.get("doc_id"), chunk_index=entity.get("chunk_index"),
                            content=entity.get("content", ""), source=entity.get("source"),
                            title=entity.get("title"), version=entity.get("version"),
                            metadata=entity.get("metadata") or {})
        # COSINE similarity and BM25 are both higher-is-better
        return search_hit(chunk, float(raw["distance"]), channel, rank)

    def search_dense(self, vector: np.ndarray, k: int, filters: StoreFilters | None = None) -> list[SearchHit]:
        expr = _expression(filters)
        if expr is None:
            return []
        return self._search("dense", np.asarray(vector, dtype=np.float32).tolist(), "vector", k, expr)

    def search_bm25(self, text: str, k: int, filters: StoreFilters | None = None) -> list[SearchHit]:
        # BM25 on a collection without rows divides by a zero average length inside Milvus (an error,
        # and a line on stdout from the Lite server). The emptiness check runs only until the store has
        # seen rows, so a knowledge base in use pays nothing; another process emptying a shared server
        # is still caught below.
        expr = _expression(filters)
        if expr is None or (not self._has_rows and self.is_empty()):
            return []
        try:
            hits = self._search("bm25", text, "sparse", k, expr)
        except Exception as exc:
            if is_empty_bm25_error(exc) and self.is_empty():
                self._has_rows = False
                return []
            raise
        self._has_rows = True
        return hits


def _expression(mapping: StoreFilters | None) -> str | None:
    """The filter expression, or None when a filter allows no value at all (`{"doc_id": []}`): nothing
    can match, and Milvus Lite fails on `doc_id in []` with an internal assertion."""
    if any(not values for values in filters.normalize(mapping, STORE_FILTER_FIELDS).values()):
        return None
    return filters.from_mapping(mapping, STORE_FILTER_FIELDS)

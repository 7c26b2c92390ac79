"""Reading chunks back and searching them (dense and BM25), only ever the active version of a document."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ...dictionary import with_aliases
from ...ports import STORE_FILTER_FIELDS, StoreFilters
from ...records import SearchHit, StoredChunk
from ...text import fold
from ..lite.internals import is_empty_bm25_error, is_racing_bm25_error
from . import filters
from .coalesce import Coalescer
from .registry import Registry
from .rows import search_hit
from .schema import CHUNK_FIELDS, DENSE_SEARCH_PARAMS, QUERY_LIMIT

# What a hit reads: its text, the two fields the active-version check needs and the metadata. Not `id` (a search
# returns its primary key anyway), `labels` (only filtered on), nor the columns `chunk_index`, `source` and `title`,
# which repeat the metadata's `chunkIndex`, `_source` and `title` (rows.stored_chunk, kb.chunk_edits): pymilvus
# decodes every cell, so 4 columns instead of 7 took 0.3-0.6 ms off this process's ~8.2 ms per hybrid lookup
# (issue 28; tests/store/milvus/test_search_fields.py checks the hits are the same as with every column). Fetching
# only keys and the version check's fields, then the kept hits' text in one get by id, cost 3 ms more instead: a
# request costs Milvus Lite about 2 ms of CPU and this process 1 ms (ARCHITECTURE.md).
SEARCH_FIELDS = ["content", "doc_id", "version", "metadata"]
BM25_ATTEMPTS = 5  # a BM25 search refused while a writer deletes rows (Lite) is asked again this many times in all


class Searcher:
    """Chunk reads and the two search channels (a part of MilvusStore); the active versions come from `registry`.
    Concurrent searches of one shape share their requests (milvus.coalesce)."""

    def __init__(self, client: Any, collection: str, registry: Registry, *, on_lite: bool = False,
                 dictionary: Sequence[str] = ()) -> None:
        self.client = client
        self.dictionary = tuple(dictionary)  # the collection's BM25 dictionary: its terms' aliases join a query
        # what a dense search asks of the index a Lite collection may have (schema.choose_index); a server's own
        # index keeps its defaults
        self.dense_params: dict[str, Any] = {"search_params": DENSE_SEARCH_PARAMS} if on_lite else {}
        self.collection = collection
        self.registry = registry
        # Known to hold chunks: set by hits, and by the store after writes; reset after deletes (_may_have_rows).
        self.has_rows = False
        self._coalesce: Coalescer[list[Any], dict[str, list[Any]]] = Coalescer(self._search_batch)

    def get_chunks(self, doc_id: str) -> list[StoredChunk]:
        """The active version's chunks of one document, in order.

        A new version committed between the registry read and the chunk query retires the version read
        (its chunks are deleted): the query then finds none, and reading the registry again finds the new
        version, whose chunks were written before its commit. So a reader never sees zero chunks."""
        for _ in range(3):
            row = self.registry.active_row(doc_id)
            if row is None:
                return []
            rows = self.client.query(
                self.collection, filter=filters.all_of(filters.equals("doc_id", doc_id),
                                                       filters.equals("version", row["version"])),
                output_fields=CHUNK_FIELDS, limit=QUERY_LIMIT, consistency_level="Strong")
            if rows:
                break
        return [StoredChunk(**{name: row[name] for name in CHUNK_FIELDS if name != "labels"},
                            labels=tuple(row.get("labels") or ()))
                for row in sorted(rows, key=lambda r: r["chunk_index"])]

    def _search(self, channels: Mapping[str, tuple[Any, str]], k: int, expr: str) -> dict[str, list[SearchHit]]:
        """Each channel's top-k over active versions (`channels`: name -> (query data, field)), best first,
        scores higher-is-better; one view of the registry judges the hits of every channel, so a document
        shows one version in the whole lookup.

        The registry is read after the searches, so a document whose new version was committed while they ran
        can show only old-version hits that the registry no longer calls active. Searching again then finds
        the new version (it was written before its commit; reads are Strong), so a reader never loses a
        document to a concurrent re-index. A view remembered from an earlier read replaces the read when every
        hit agrees with it (see milvus.versions for why that is safe)."""
        limits = dict.fromkeys(channels, k)
        raw = self._first_round(channels, k, expr)
        kept: dict[str, list[Any]] = {}
        retries, first = 0, True
        while True:
            active = self._versions_of(raw.values(), may_recall=first)
            first, todo, switched_any = False, [], False
            for channel, result in raw.items():
                kept[channel] = [h for h in result if active.get(h["entity"]["doc_id"]) == h["entity"]["version"]]
                switched = {h["entity"]["doc_id"] for h in result} - {h["entity"]["doc_id"] for h in kept[channel]}
                if switched & active.keys() and retries < 2:
                    todo.append(channel)
                    switched_any = True
                elif len(kept[channel]) < k and len(result) >= limits[channel] and limits[channel] < QUERY_LIMIT:
                    # stale rows crowded the window
                    limits[channel] = min(QUERY_LIMIT, limits[channel] * 2 + (len(result) - len(kept[channel])))
                    todo.append(channel)
            if not todo:
                break
            retries += switched_any
            for channel in todo:
                data, field = channels[channel]
                raw[channel] = self._search_request(field, [data], limits[channel], expr)[0]
        return {channel: [self._hit(h, channel, rank) for rank, h in enumerate(kept[channel][:k], start=1)]
                for channel in channels}

    def _first_round(self, channels: Mapping[str, tuple[Any, str]], k: int, expr: str) -> dict[str, list[Any]]:
        """Each channel's top-k window, searched together with concurrent searches of the same shape (see
        milvus.coalesce: the hits are the same as alone)."""
        shape = (k, expr, tuple((channel, field) for channel, (_, field) in channels.items()))
        return self._coalesce(shape, [data for data, _ in channels.values()])

    def _search_batch(self, shape: Any, items: list[list[Any]]) -> list[dict[str, list[Any]]]:
        """One request per channel for every item (its query data per channel, in the shape's order)."""
        k, expr, fields = shape
        out: list[dict[str, list[Any]]] = [{} for _ in items]
        for i, (channel, field) in enumerate(fields):
            for found, hits in zip(out, self._search_request(field, [item[i] for item in items], k, expr)):
                found[channel] = hits
        return out

    def _search_request(self, field: str, data: list[Any], limit: int, expr: str) -> list[list[Any]]:
        """One search request: the hits of each query, decoded here (pymilvus decodes lazily, and another
        thread may be handed them)."""
        found = self.client.search(self.collection, data=data, anns_field=field, limit=min(limit, QUERY_LIMIT),
                                   filter=expr, output_fields=SEARCH_FIELDS, consistency_level="Strong",
                                   **(self.dense_params if field == "vector" else {}))
        return [list(hits) for hits in found]

    def _versions_of(self, results: Iterable[list[Any]], may_recall: bool) -> dict[str, str]:
        """The active version of every document among the hits: remembered, when that is allowed and every hit
        agrees with it, else read from the registry."""
        hits = [h["entity"] for result in results for h in result]
        doc_ids = {h["doc_id"] for h in hits}
        if may_recall:
            known = self.registry.versions.recall(doc_ids)
            if known is not None and all(known[h["doc_id"]] == h["version"] for h in hits):
                return known
        return self.registry.active_versions(doc_ids)

    @staticmethod
    def _hit(raw: Mapping[str, Any], channel: str, rank: int) -> SearchHit:
        entity = raw["entity"]
        metadata = entity.get("metadata") or {}
        chunk = StoredChunk(id=str(raw["id"]), doc_id=entity.get("doc_id"),
                            chunk_index=entity.get("chunk_index", metadata.get("chunkIndex")),
                            content=entity.get("content", ""), source=entity.get("source", metadata.get("_source")),
                            title=entity.get("title", str(metadata.get("title") or "")[:300]),
                            version=entity.get("version"), metadata=metadata)
        # COSINE similarity and BM25 are both higher-is-better
        return search_hit(chunk, float(raw["distance"]), channel, rank)

    def search_dense(self, vector: np.ndarray, k: int, filters: StoreFilters | None = None) -> list[SearchHit]:
        expr = _expression(filters)
        if expr is None:
            return []
        return self._search({"dense": (_dense_data(vector), "vector")}, k, expr)["dense"]

    def search_bm25(self, text: str, k: int, filters: StoreFilters | None = None) -> list[SearchHit]:
        """BM25 over `bm25_text`: the query is folded as the rows were (text.fold), so Traditional and Simplified
        match each other; the hits carry the original `content`."""
        expr = _expression(filters)
        if expr is None or not self._may_have_rows():
            return []
        return self._search_with_bm25({"bm25": (self.bm25_query(text), "sparse")}, k, expr)["bm25"]

    def search_both(self, vector: np.ndarray, text: str, k: int,
                    filters: StoreFilters | None = None) -> tuple[list[SearchHit], list[SearchHit]]:
        """`search_dense(vector)` and `search_bm25(text)` judged by one registry view (one read, or none)."""
        expr = _expression(filters)
        if expr is None:
            return [], []
        dense = (_dense_data(vector), "vector")
        if not self._may_have_rows():
            return self._search({"dense": dense}, k, expr)["dense"], []
        found = self._search_with_bm25({"dense": dense, "bm25": (self.bm25_query(text), "sparse")}, k, expr)
        return found["dense"], found["bm25"]

    def bm25_term_scores(self, terms: Sequence[str], ids: Sequence[str]) -> dict[str, dict[str, float]]:
        """Each term's BM25 score of the rows among `ids` that contain it, the term searched alone (folded as a
        query is) and the search restricted to those rows: one request of len(terms) queries (ports.BM25TermScorer).
        Milvus's statistics are the collection's whatever the filter (the filter only narrows the rows scored)."""
        ids = list(dict.fromkeys(ids))
        if not terms or not ids or not self._may_have_rows():
            return {}
        found = self.client.search(self.collection, data=[self.bm25_query(t) for t in terms], anns_field="sparse",
                                   limit=min(len(ids), QUERY_LIMIT), filter=filters.one_of("id", ids),
                                   output_fields=[], consistency_level="Strong")
        return {term: {str(h["id"]): float(h["distance"]) for h in hits} for term, hits in zip(terms, found)}

    def bm25_query(self, text: str) -> str:
        """What BM25 is asked for `text`: folded as the rows were, with the aliases of the dictionary terms it holds."""
        return fold(with_aliases(text, self.dictionary))

    def _may_have_rows(self) -> bool:
        # BM25 on a collection without rows divides by a zero average length inside Milvus (an error,
        # and a line on stdout from the Lite server). The emptiness check runs only until the store has
        # seen rows, so a knowledge base in use pays nothing; another process emptying a shared server
        # is still caught in _search_with_bm25.
        return self.has_rows or not self.registry.is_empty()

    def _search_with_bm25(self, channels: Mapping[str, tuple[Any, str]], k: int,
                          expr: str) -> dict[str, list[SearchHit]]:
        for attempt in range(BM25_ATTEMPTS):
            try:
                found = self._search(channels, k, expr)
                break
            except Exception as exc:
                if is_empty_bm25_error(exc) and self.registry.is_empty():
                    self.has_rows = False
                    return {channel: [] for channel in channels}
                if not is_racing_bm25_error(exc) or attempt == BM25_ATTEMPTS - 1:
                    raise
                time.sleep(0.05 * (attempt + 1))  # a writer's deletes settle; the search is asked again
        self.has_rows = True
        return found


def _dense_data(vector: np.ndarray) -> list[float]:
    return np.asarray(vector, dtype=np.float32).tolist()


def _expression(mapping: StoreFilters | None) -> str | None:
    """The filter expression, or None when a filter allows no value at all (`{"doc_id": []}`): nothing
    can match, and Milvus Lite fails on `doc_id in []` with an internal assertion."""
    if any(not values for values in filters.normalize(mapping, STORE_FILTER_FIELDS).values()):
        return None
    return filters.from_mapping(mapping, STORE_FILTER_FIELDS)

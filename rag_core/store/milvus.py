"""Milvus store: one chunk collection plus a small document registry, on Milvus Lite or a server.

Re-indexing never loses data. Every chunk row carries the `version` it belongs to, and the registry
(`<collection>_docs`) says which version of each document is active. Registry rows are only ever
inserted or deleted, never updated in place (an upsert is a delete plus an insert, and a reader could
fall into the gap). Replacing a document:

1. registry: insert a `pending` row for the new version (the old version's `active` row stays);
2. insert the new version's chunks (already embedded by the caller);
3. registry: insert an `active` row for the new version  <- the commit point;
4. delete the old version's chunks, then the pending row and the old version's registry row.

`replace_documents` does this for a batch of documents with one round trip per step.

The active version of a document is its newest `active` row. Searches drop chunk rows of any other
version, so a reader sees the old version until step 3 and the new one after it: never zero chunks,
never a mix. A process killed at any step leaves the previous version complete and searchable;
`recover()` (run when the store opens) deletes what was left behind.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..errors import StoreError, StoreLockedError, StoreMigrationNeeded
from ..records import Chunk, Document, SearchHit, StoredDocument
from . import filters, lite_lock

log = logging.getLogger(__name__)

# Of the chunk collection; bump when a field or the analyzer changes (then `migrate` rebuilds it).
# 1: jieba + lowercase + stemmer + stop. 2: punctuation tokens dropped (cnalphanumonly).
SCHEMA_VERSION = 2
# jieba segments Chinese; cnalphanumonly drops the punctuation and whitespace tokens jieba emits (they
# skewed BM25 length normalisation: COVID-QA nDCG@10 0.757 -> 0.821, CMRC 2018 0.957 -> 0.977);
# lowercase + English stemming + stop words make English terms match as they do in bm25s.
ANALYZER: dict[str, Any] = {
    "tokenizer": "jieba",
    "filter": ["cnalphanumonly", "lowercase", {"type": "stemmer", "language": "english"},
               {"type": "stop", "stop_words": ["_english_"]}],
}
MIGRATING = "__migrating"  # suffix of the temporary copy a schema migration builds
ABANDONED_AFTER_S = 6 * 3600  # on a shared server, a pending version this old is a crashed writer's
CHUNK_FIELDS = ["id", "content", "doc_id", "chunk_index", "source", "title", "version", "metadata"]
REGISTRY_FIELDS = [
    "key", "doc_id", "version", "state", "committed_ns", "file_name", "extension", "size_bytes", "chunks",
    "content_hash", "fingerprint", "ingested_at",
]
INSERT_BATCH = 500
QUERY_LIMIT = 16384  # Milvus's cap on one query/search window


@dataclass(frozen=True)
class NewVersion:
    """A complete new version of a document, embedded and ready to write."""

    doc: Document
    chunks: Sequence[Chunk]
    vectors: np.ndarray
    fingerprint: str


@dataclass(frozen=True)
class WriteResult:
    version: str
    replaced: bool  # True when a previous version was superseded


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def chunk_row_id(doc_id: str, version: str, chunk_index: int) -> str:
    digest = hashlib.sha256(f"{doc_id}\x00{version}\x00{chunk_index}".encode()).hexdigest()
    return digest[:32]


def is_lite(uri: str) -> bool:
    return "://" not in uri


class MilvusStore:
    """The chunk collection and its registry. Built by `bootstrap`; connects lazily."""

    def __init__(self, uri: str, collection: str, token: str = "", timeout: float = 60.0) -> None:
        self.uri = uri
        self.collection = collection
        self.registry = f"{collection}_docs"
        self._token = token
        self._timeout = timeout
        self._client: Any = None
        self._has_rows = False  # known to hold chunks (set by writes and hits; reset by deletes)
        self.embedder_name = ""
        self.dim = 0

    # ---------------------------------------------------------------- connection and schema
    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = self._connect()
        return self._client

    def _connect(self) -> Any:
        from pymilvus import MilvusClient
        from pymilvus.exceptions import MilvusException

        # pymilvus logs every failed RPC with a traceback (and a harmless warning per iterator on Lite);
        # this store raises its own messages instead.
        logging.getLogger("pymilvus").setLevel(logging.CRITICAL)

        if is_lite(self.uri):
            path = Path(self.uri)
            if path.suffix != ".db":
                raise StoreError(f"milvus.uri {self.uri!r}: a Milvus Lite file must end in .db, "
                                 "or use http://host:19530 for a server.")
            path.parent.mkdir(parents=True, exist_ok=True)
            lite_lock.acquire(path)
            try:
                return MilvusClient(str(path))
            except MilvusException as exc:
                lite_lock.release(path)
                if "Open local milvus failed" in str(exc):
                    raise StoreLockedError(f"The knowledge base {path} is already open in another program "
                                           "(not this workbench). Close it, or use another data dir.") from None
                raise StoreError(f"Could not open Milvus Lite at {path}: {exc}") from None
        try:
            return MilvusClient(uri=self.uri, token=self._token, timeout=self._timeout)
        except MilvusException as exc:
            from ..config import redact_uri

            raise StoreError(f"Could not connect to Milvus at {redact_uri(self.uri)}: {exc.message}. "
                             "Check MILVUS_URI / MILVUS_TOKEN and that the server is running.") from None

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
            if is_lite(self.uri) and lite_lock.release(Path(self.uri)):
                # Stop the embedded server too, so another process can open the file after us.
                from milvus_lite.server_manager import server_manager_instance

                server_manager_instance.release_server(self.uri)

    def _description(self) -> str:
        return json.dumps({"app": "rag-workbench", "schema": SCHEMA_VERSION, "embedder": self.embedder_name,
                           "dim": self.dim, "analyzer": ANALYZER}, ensure_ascii=False)

    def open(self, embedder_name: str, dim: int, *, migrate: bool = False) -> None:
        """Create or check the collections for this embedder, then finish any interrupted write.
        An older collection layout raises StoreMigrationNeeded, unless `migrate` rebuilds it now."""
        self.embedder_name, self.dim = embedder_name, dim
        client = self.client
        if client.has_collection(self.collection + MIGRATING):
            self._finish_migration()
        if client.has_collection(self.collection):
            self._check_existing(migrate)
        else:
            self._create_chunks(self.collection)
        if not client.has_collection(self.registry):
            self._create_registry()
        client.load_collection(self.collection)
        client.load_collection(self.registry)
        self.recover()

    def _meta(self, name: str) -> dict[str, Any]:
        try:
            return json.loads(self.client.describe_collection(name).get("description") or "{}")
        except json.JSONDecodeError:
            return {}

    def _check_existing(self, migrate: bool) -> None:
        meta = self._meta(self.collection)
        if meta.get("app") != "rag-workbench":
            raise StoreError(f"Collection {self.collection!r} exists but was not created by this workbench; "
                             "choose another milvus.collection.")
        if (meta.get("embedder"), meta.get("dim")) != (self.embedder_name, self.dim):
            raise StoreError(
                f"Collection {self.collection!r} was indexed with {meta.get('embedder')} ({meta.get('dim')}-d), but "
                f"the configured embedder is {self.embedder_name} ({self.dim}-d); vectors from different models "
                "cannot be compared. Either set embedding.provider back, or re-embed everything into a new "
                f"collection: `python -m rag_core --set milvus.collection=NEW reindex --from {self.collection}`."
            )
        if meta.get("schema") != SCHEMA_VERSION:
            if not migrate:
                raise StoreMigrationNeeded(
                    f"Collection {self.collection!r} was created by an older version of the workbench (layout "
                    f"{meta.get('schema')}; this version uses {SCHEMA_VERSION}, with a better full-text analyzer). "
                    "Run `python -m rag_core migrate` once (or press Migrate on the Home page): it rebuilds the "
                    "collection and keeps every vector, nothing is embedded again."
                )
            self.migrate()

    # ---------------------------------------------------------------- schema migration
    def migrate(self) -> int:
        """Rebuild the chunk collection with the current layout, copying every row (vectors included;
        the BM25 vectors are recomputed by Milvus). Returns the number of rows, 0 when nothing to do.

        The rows are first copied to `<collection>__migrating`; only when that copy is complete is the
        old collection dropped and recreated from it, so a failure at any point loses nothing and the
        next `open` finishes the job."""
        client = self.client
        if self._meta(self.collection).get("schema") == SCHEMA_VERSION:
            return 0
        temporary = self.collection + MIGRATING
        if client.has_collection(temporary):  # an earlier attempt that never reached the swap
            client.drop_collection(temporary)
        self._create_chunks(temporary)
        client.load_collection(self.collection)
        self._copy_rows(self.collection, temporary)
        client.drop_collection(self.collection)  # from here on the temporary copy is the only full one
        return self._finish_migration()

    def _finish_migration(self) -> int:
        client = self.client
        temporary = self.collection + MIGRATING
        if client.has_collection(self.collection):
            if self._meta(self.collection).get("schema") != SCHEMA_VERSION:
                client.drop_collection(temporary)  # the old collection is intact: the copy was not finished
                return 0
            client.drop_collection(self.collection)  # a copy back that was interrupted: start it again
        self._create_chunks(self.collection)
        client.load_collection(temporary)
        rows = self._copy_rows(temporary, self.collection)
        client.drop_collection(temporary)
        log.info("migrated %d rows of %s to layout %d", rows, self.collection, SCHEMA_VERSION)
        return rows

    def _copy_rows(self, source: str, target: str) -> int:
        fields = [f for f in CHUNK_FIELDS if f != "id"] + ["vector"]
        iterator = self.client.query_iterator(source, batch_size=1000, filter="", output_fields=fields)
        copied = 0
        try:
            while batch := iterator.next():
                self._insert_batch([{name: row[name] for name in ["id", *fields]} for row in batch], target)
                copied += len(batch)
        finally:
            iterator.close()
        expected = self.client.query(source, filter="", output_fields=["count(*)"])[0]["count(*)"]
        if copied != expected:
            raise StoreError(f"Migration copied {copied} of {expected} rows from {source}; run it again.")
        return copied

    def _create_chunks(self, name: str) -> None:
        from pymilvus import DataType, Function, FunctionType

        client = self.client
        schema = client.create_schema(auto_id=False, enable_dynamic_field=False, description=self._description())
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=self.dim)
        schema.add_field("content", DataType.VARCHAR, max_length=65535, enable_analyzer=True,
                         analyzer_params=ANALYZER)
        schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_field("doc_id", DataType.VARCHAR, max_length=1024)
        schema.add_field("chunk_index", DataType.INT64)
        schema.add_field("source", DataType.VARCHAR, max_length=1024)
        schema.add_field("title", DataType.VARCHAR, max_length=1024)
        schema.add_field("version", DataType.VARCHAR, max_length=64)
        schema.add_field("metadata", DataType.JSON)
        schema.add_function(Function(name="content_bm25", function_type=FunctionType.BM25,
                                     input_field_names=["content"], output_field_names=["sparse"]))
        index = client.prepare_index_params()
        # FLAT is exact and fast enough in Lite (31 ms at 100k x 512-d); a server picks its own.
        index.add_index("vector", index_type="FLAT" if is_lite(self.uri) else "AUTOINDEX", metric_type="COSINE")
        index.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
        client.create_collection(name, schema=schema, index_params=index)

    def _create_registry(self) -> None:
        from pymilvus import DataType

        client = self.client
        schema = client.create_schema(auto_id=False, enable_dynamic_field=False,
                                      description="rag-workbench document registry")
        # The key is a hash: Milvus Lite's delete by a VARCHAR primary key containing `'` fails with an
        # SQL syntax error inside Lite, and doc_ids may contain quotes.
        schema.add_field("key", DataType.VARCHAR, is_primary=True, max_length=64)
        schema.add_field("doc_id", DataType.VARCHAR, max_length=1024)
        for name in ("version", "state", "content_hash", "fingerprint", "ingested_at"):
            schema.add_field(name, DataType.VARCHAR, max_length=128)
        schema.add_field("committed_ns", DataType.INT64)  # when the row was written (active: the commit)
        schema.add_field("file_name", DataType.VARCHAR, max_length=1024)
        schema.add_field("extension", DataType.VARCHAR, max_length=32)
        schema.add_field("size_bytes", DataType.INT64)
        schema.add_field("chunks", DataType.INT64)
        schema.add_field("_unused", DataType.FLOAT_VECTOR, dim=2)  # Milvus requires a vector field
        index = client.prepare_index_params()
        index.add_index("_unused", index_type="FLAT", metric_type="L2")
        client.create_collection(self.registry, schema=schema, index_params=index)

    # ---------------------------------------------------------------- registry
    def _registry_rows(self, expr: str) -> list[dict[str, Any]]:
        rows = self.client.query(self.registry, filter=expr, output_fields=REGISTRY_FIELDS, limit=QUERY_LIMIT)
        if len(rows) < QUERY_LIMIT:
            return rows
        rows = []  # more than one window: page through all of them
        iterator = self.client.query_iterator(self.registry, batch_size=1000, filter=expr,
                                              output_fields=REGISTRY_FIELDS)
        try:
            while batch := iterator.next():
                rows.extend(batch)
        finally:
            iterator.close()
        return rows

    @staticmethod
    def _newest_active(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
        """doc_id -> its newest active registry row."""
        active: dict[str, dict[str, Any]] = {}
        for row in rows:
            if row["state"] == "active":
                seen = active.get(row["doc_id"])
                if seen is None or (row["committed_ns"], row["version"]) > (seen["committed_ns"], seen["version"]):
                    active[row["doc_id"]] = dict(row)
        return active

    def _active_row(self, doc_id: str) -> dict[str, Any] | None:
        return self._newest_active(self._registry_rows(filters.equals("doc_id", doc_id))).get(doc_id)

    @staticmethod
    def _registry_row(doc: Document, version: str, state: str, **fields: Any) -> dict[str, Any]:
        key = hashlib.sha256(f"{doc.doc_id}\x00{version}\x00{state}".encode()).hexdigest()[:32]
        return {"key": key, "doc_id": doc.doc_id, "version": version, "state": state, "committed_ns": 0,
                "file_name": "", "extension": "", "size_bytes": 0, "chunks": 0, "content_hash": "",
                "fingerprint": "", "ingested_at": "", "_unused": [0.0, 0.0], **fields}

    def _registry_insert(self, rows: list[dict[str, Any]]) -> list[str]:
        self.client.insert(self.registry, rows)
        return [row["key"] for row in rows]


    def _delete_versions(self, versions: list[str]) -> None:
        self.client.delete(self.collection, filter=filters.one_of("version", versions))


    def recover(self) -> int:
        """Remove what interrupted writes left behind: versions superseded by a newer active one, and
        pending versions that were never committed. On Milvus Lite nobody else can be writing (one
        process per file), so every pending version is abandoned; on a shared server another process
        may be writing right now, so only pending versions older than ABANDONED_AFTER_S are.
        Returns how many documents needed it."""
        now = time.time_ns()

        def abandoned(row: Mapping[str, Any]) -> bool:
            return is_lite(self.uri) or now - int(row["committed_ns"]) > ABANDONED_AFTER_S * 1_000_000_000

        rows = self._registry_rows('doc_id != ""')
        active = self._newest_active(rows)
        dead = [r for r in rows if (r["state"] == "active" and r["key"] != active[r["doc_id"]]["key"])
                or (r["state"] == "pending" and abandoned(r))]
        if dead:
            # A pending row whose version was committed only lost its clean-up: keep those chunks.
            live = {r["version"] for r in active.values()}
            if versions := sorted({r["version"] for r in dead} - live):
                self._delete_versions(versions)
            self.client.delete(self.registry, filter=filters.one_of("key", [r["key"] for r in dead]))
            log.info("recovered %d interrupted document writes", len({r["doc_id"] for r in dead}))
        return len({r["doc_id"] for r in dead})

    # ---------------------------------------------------------------- writes
    def fingerprints(self, doc_ids: Iterable[str]) -> dict[str, tuple[str, int]]:
        """doc_id -> (fingerprint, chunks) of the active version, for the indexed ones among `doc_ids`."""
        ids = sorted(set(doc_ids))
        if not ids:
            return {}
        rows = self._registry_rows(filters.all_of(filters.one_of("doc_id", ids), 'state == "active"'))
        return {d: (r["fingerprint"], int(r["chunks"])) for d, r in self._newest_active(rows).items()}

    def replace_document(self, doc: Document, chunks: Sequence[Chunk], vectors: np.ndarray,
                         fingerprint: str) -> WriteResult:
        """Write a new complete version of `doc` and retire the old one (see the module docstring)."""
        return self.replace_documents([NewVersion(doc, chunks, vectors, fingerprint)])[0]

    def replace_documents(self, items: Sequence[NewVersion]) -> list[WriteResult]:
        """`replace_document` for several documents with one round trip per step instead of one per
        document. Each document still switches versions atomically at its own commit row."""
        doc_ids = [item.doc.doc_id for item in items]
        if len(set(doc_ids)) != len(doc_ids):
            raise StoreError("replace_documents: a document appears twice in one batch.")
        for item in items:
            if len(item.chunks) != len(item.vectors):
                raise StoreError(f"{item.doc.doc_id}: {len(item.chunks)} chunks but {len(item.vectors)} vectors.")
            if not item.chunks:
                raise StoreError(f"{item.doc.doc_id}: nothing to index (no chunks).")
        ids = sorted(set(doc_ids))
        old = self._newest_active(self._registry_rows(filters.one_of("doc_id", ids))) if ids else {}
        versions = [uuid.uuid4().hex[:16] for _ in items]
        pending = self._registry_insert([self._registry_row(item.doc, v, "pending", committed_ns=time.time_ns())  # 1
                                         for item, v in zip(items, versions)])
        ingested_at = utc_now()
        rows = [self._chunk_row(item.doc, chunk, vector, version, len(item.chunks), ingested_at)
                for item, version in zip(items, versions) for chunk, vector in zip(item.chunks, item.vectors)]
        for start in range(0, len(rows), INSERT_BATCH):  # 2
            self._insert_batch(rows[start:start + INSERT_BATCH])
        committed_ns = time.time_ns()
        self._registry_insert([self._registry_row(  # 3: the commit point
            item.doc, version, "active", committed_ns=committed_ns, file_name=item.doc.file_name,
            extension=item.doc.extension, size_bytes=item.doc.size_bytes, chunks=len(item.chunks),
            content_hash=item.doc.content_hash, fingerprint=item.fingerprint, ingested_at=ingested_at)
            for item, version in zip(items, versions)])
        retired = list(old.values())
        if retired:  # 4
            self._delete_versions([r["version"] for r in retired])
        self.client.delete(self.registry, filter=filters.one_of("key", pending + [r["key"] for r in retired]))
        self._has_rows = True
        return [WriteResult(version=v, replaced=item.doc.doc_id in old) for item, v in zip(items, versions)]

    def _insert_batch(self, rows: list[dict[str, Any]], collection: str = "") -> None:
        """One insert call; a seam for tests that interrupt a write."""
        self.client.insert(collection or self.collection, rows)

    @staticmethod
    def _chunk_row(doc: Document, chunk: Chunk, vector: np.ndarray, version: str, total: int,
                   ingested_at: str) -> dict[str, Any]:
        metadata = {
            "_source": doc.doc_id, "_extension": doc.extension, "_file_name": doc.file_name,
            "chunkIndex": chunk.chunk_index, "totalChunks": total, "title": chunk.title,
            "docId": doc.doc_id, "headingPath": chunk.heading_path_text, "start": chunk.start, "end": chunk.end,
            "overlapChars": chunk.overlap_chars, "docHash": doc.content_hash,
            "chunkHash": hashlib.sha256(chunk.text.encode()).hexdigest(), "ingestedAt": ingested_at,
            "version": version,
        }
        return {
            "id": chunk_row_id(doc.doc_id, version, chunk.chunk_index), "vector": np.asarray(vector).tolist(),
            "content": chunk.text, "doc_id": doc.doc_id, "chunk_index": chunk.chunk_index,
            "source": doc.doc_id, "title": chunk.title[:300], "version": version, "metadata": metadata,
        }

    def delete_document(self, doc_id: str) -> bool:
        """Remove a document and all its chunks. Returns False when it was not indexed."""
        if self._active_row(doc_id) is None:
            return False
        self.client.delete(self.collection, filter=filters.equals("doc_id", doc_id))
        self.client.delete(self.registry, filter=filters.equals("doc_id", doc_id))
        self._has_rows = False  # maybe the last one: check again before the next BM25 search
        return True

    def drop(self) -> None:
        """Drop the collections (tests)."""
        for name in (self.collection, self.registry, self.collection + MIGRATING):
            if self.client.has_collection(name):
                self.client.drop_collection(name)

    # ---------------------------------------------------------------- reads
    def list_documents(self) -> list[StoredDocument]:
        rows = self._newest_active(self._registry_rows('state == "active"')).values()
        docs = [StoredDocument(doc_id=r["doc_id"], file_name=r["file_name"], extension=r["extension"],
                               size_bytes=int(r["size_bytes"]), chunks=int(r["chunks"]),
                               content_hash=r["content_hash"], version=r["version"],
                               ingested_at=r["ingested_at"]) for r in rows]
        return sorted(docs, key=lambda d: d.doc_id)

    def is_empty(self) -> bool:
        return not self.client.query(self.registry, filter='state == "active"', output_fields=["doc_id"], limit=1)

    def count_chunks(self) -> int:
        return sum(d.chunks for d in self.list_documents())

    def get_chunks(self, doc_id: str) -> list[dict[str, Any]]:
        """The active version's chunk rows of one document, in order."""
        row = self._active_row(doc_id)
        if row is None:
            return []
        rows = self.client.query(
            self.collection, filter=filters.all_of(filters.equals("doc_id", doc_id),
                                                   filters.equals("version", row["version"])),
            output_fields=CHUNK_FIELDS, limit=QUERY_LIMIT)
        return sorted(rows, key=lambda r: r["chunk_index"])

    def _active_versions(self, doc_ids: Iterable[str]) -> dict[str, str]:
        ids = sorted(set(doc_ids))
        if not ids:
            return {}
        rows = self.client.query(self.registry, filter=filters.all_of(filters.one_of("doc_id", ids),
                                                                      'state == "active"'),
                                 output_fields=["doc_id", "version", "state", "committed_ns"], limit=QUERY_LIMIT,
                                 consistency_level="Strong")
        return {doc_id: row["version"] for doc_id, row in self._newest_active(rows).items()}

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
        metadata = dict(entity.get("metadata") or {})
        for name in ("doc_id", "chunk_index", "source", "title", "version"):
            metadata.setdefault(name, entity.get(name))
        score = float(raw["distance"])  # COSINE similarity and BM25 are both higher-is-better
        return SearchHit(id=str(raw["id"]), score=score, content=entity.get("content", ""), metadata=metadata,
                         channels={channel: (rank, score)})

    def search_dense(self, vector: np.ndarray, k: int, expr: str = "") -> list[SearchHit]:
        return self._search("dense", np.asarray(vector, dtype=np.float32).tolist(), "vector", k, expr)

    def search_bm25(self, text: str, k: int, expr: str = "") -> list[SearchHit]:
        # BM25 on a collection without rows divides by a zero average length inside Milvus (an error,
        # and a line on stdout from the Lite server). The emptiness check runs only until the store has
        # seen rows, so a knowledge base in use pays nothing; another process emptying a shared server
        # is still caught below.
        from pymilvus.exceptions import MilvusException

        if not self._has_rows and self.is_empty():
            return []
        try:
            hits = self._search("bm25", text, "sparse", k, expr)
        except MilvusException as exc:
            if "NaN or Inf" in str(exc) and self.is_empty():
                self._has_rows = False
                return []
            raise
        self._has_rows = True
        return hits

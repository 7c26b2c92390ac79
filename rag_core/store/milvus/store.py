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

The bytes a version was indexed from (its kept original, see originals.files) are written between
steps 1 and 3 and removed in step 4 with the old version, so the kept original is always the active
version's.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import StoreError
from ...files import FileLock
from ...names import REGISTRY_SUFFIX, UPGRADE, upgrades_of
from ...ports import StoreFilters
from ...records import Chunk, Document, IndexedVersion, NewVersion, SearchHit, StoredChunk, StoredDocument, WriteResult
from ...scope import document_labels
from ..edits import DAMAGED as EDITS_DAMAGED
from ..edits import ChunkEdits
from ..kept import EDITS, LABELS
from ..labels import DAMAGED as LABELS_DAMAGED
from ..labels import DocumentLabels
from ..lite import connection
from ..lite.connection import is_lite
from ..originals.files import OriginalFiles
from . import writers
from .registry import Registry
from .schema import IVF_FROM, MIGRATING, DenseIndex, Schema, check_collection_name
from .search import Searcher
from .versions import ActiveVersions
from .writes import Writer

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

__all__ = ["MilvusStore", "NewVersion", "WriteResult"]


@dataclass(frozen=True)
class _Parts:
    client: Any
    registry: Registry
    writer: Writer
    searcher: Searcher


def chunk_collection(kb: str, chunks: str) -> str:
    """The collection holding knowledge base `kb`'s chunks: its own name, or an upgrade's (`milvus.chunks`)."""
    return own_upgrade(kb, chunks) if chunks and chunks != kb else kb


def own_upgrade(kb: str, name: str) -> str:
    """`name` when it is one of knowledge base `kb`'s chunk collections (its own name, or an upgrade's:
    names.upgrades_of), else StoreError."""
    if name != kb and (not upgrades_of(kb, [name]) or len(name) > 255):
        raise StoreError(f"{name!r} is not a chunk collection of knowledge base {kb!r} (those are {kb!r} and "
                         f"{kb + UPGRADE}<embedder>).")
    return name


class MilvusStore:
    """The chunk collection and its registry: the ChunkStore (rag_core.ports) on Milvus. Built by
    `bootstrap`; connects lazily.

    Composed of parts that each take the client: the registry (milvus.registry: active versions, listing), the
    writer (milvus.writes: versioned replace, delete, drop, recovery) and the searcher (milvus.search: chunk
    reads, dense and BM25); the schema (milvus.schema: layout, checks, migration) is made for the embedder when
    needed. The connection (Milvus Lite or a server) is lite.connection's."""

    def __init__(self, uri: str, collection: str, token: str = "", timeout: float = 60.0, *,
                 lite: connection.LiteOptions | None = None, originals: Path | None = None,
                 legacy_originals: Path | None = None, database: Engine | None = None, chunks: str = "") -> None:
        """`lite`: how a Milvus Lite file is reached (shared through the store host, or exclusive: see
        lite.connection); `originals`: the folder for this collection's kept originals (None: keep none);
        `legacy_originals`: where older versions kept them (`uploads/<collection>`), adopted on open; `database`:
        the shared-state database that keeps the chunk edits and labels instead of files (store.kept), when
        database.url is set."""
        self.uri = uri
        self.lite = lite or connection.LiteOptions(collection=collection)
        self.collection = check_collection_name(collection)
        # the collection holding the chunks: the knowledge base's own, or the one an embedder upgrade swapped in
        self.chunks = chunk_collection(collection, chunks)
        self.originals = OriginalFiles(originals) if originals is not None else None
        # front matter and tags (store.labels) and chunk edits (store.edits), beside the kept originals, changed under
        # one lock that holds across the processes sharing the data folder (and the machines sharing `database`)
        beside = originals.parent if originals is not None else None
        if database is None:
            self.lock = FileLock(beside / f".{collection}.lock" if beside is not None else None)
            self.labels = DocumentLabels(beside / f"{collection}.labels.json" if beside else None, self.lock)
            self.edits = ChunkEdits(beside / f"{collection}.edits.json" if beside else None, self.lock)
        else:  # in the database, under a lock that holds across machines too (store.kept)
            from ..kept_sql import SqlDocument, database_lock

            self.lock = FileLock(beside / f".{collection}.lock" if beside is not None else None,
                                 beyond=database_lock(database, collection))
            self.labels = DocumentLabels(lock=self.lock, document=SqlDocument(
                database, collection, LABELS, beside / f"{collection}.labels.json" if beside else None, LABELS_DAMAGED))
            self.edits = ChunkEdits(lock=self.lock, document=SqlDocument(
                database, collection, EDITS, beside / f"{collection}.edits.json" if beside else None, EDITS_DAMAGED))
        self.legacy_originals = legacy_originals
        self._token = token
        self._timeout = timeout
        self._parts: _Parts | None = None  # built on the client once connected
        self._versions = ActiveVersions()  # what the registry said a moment ago (milvus.versions), across reconnects
        self.embedder_name = ""
        self.dim = 0
        # the chunk collection's own BM25 dictionary and stop words (rag_core.dictionary), read from its description
        self.bm25_terms: tuple[str, ...] = ()
        self.stop_words: tuple[str, ...] = ()

    # ---------------------------------------------------------------- the client and the parts
    @property
    def client(self) -> Any:
        """The Milvus client every part works through, connected on first use (and again after `close`)."""
        return self._connected().client

    @client.setter
    def client(self, client: Any) -> None:
        """Work through `client` from now on: the parts are built on it. Tests set the real client wrapped so
        that a chosen call fails; the one replaced is not closed (it is the one wrapped)."""
        self._parts = self._built_on(client)

    def _connected(self) -> _Parts:
        if self._parts is None:
            self._parts = self._built_on(connection.connect(self.uri, self._token, self._timeout, self.lite))
        return self._parts

    def _built_on(self, client: Any) -> _Parts:
        registry = Registry(client, self.collection + REGISTRY_SUFFIX, self.originals, self._versions)
        writer = Writer(client, self.chunks, registry, self.originals, on_lite=is_lite(self.uri), kb=self.collection,
                        dictionary=self.bm25_terms)
        return _Parts(client, registry, writer, Searcher(client, self.chunks, registry, on_lite=is_lite(self.uri),
                                                         dictionary=self.bm25_terms))

    @property
    def registry(self) -> Registry:
        return self._connected().registry

    @property
    def writer(self) -> Writer:
        return self._connected().writer

    @property
    def searcher(self) -> Searcher:
        return self._connected().searcher

    @property
    def schema(self) -> Schema:
        """The collections' layout for the embedder the store was opened for."""
        return Schema(self.client, self.chunks, self.registry.name, self.embedder_name, self.dim,
                      on_lite=is_lite(self.uri), labels=self._labels_by_document, dictionary=self.bm25_terms,
                      stop_words=self.stop_words)

    def _labels_by_document(self) -> dict[str, tuple[str, ...]]:
        """doc_id -> its rows' labels, from the labels file and the registry (for rows of an older layout)."""
        if not self.client.has_collection(self.registry.name):
            return {}
        self.client.load_collection(self.registry.name)
        labels = self.labels.all()
        return {d.doc_id: document_labels(d.doc_id, d.extension, d.ingested_at, labels.get(d.doc_id))
                for d in self.list_documents()}

    def close(self) -> None:
        if self._parts is not None:
            self._parts.client.close()
            self._parts = None

    # ---------------------------------------------------------------- opening
    def open(self, embedder_name: str, dim: int, *, migrate: bool = False) -> None:
        """Create or check the collections for this embedder, then finish any interrupted write.
        An older collection layout raises StoreMigrationNeeded, unless `migrate` rebuilds it now."""
        self.embedder_name, self.dim = embedder_name, dim
        client = self.client
        for made in (self.chunks, self.chunks + MIGRATING):
            if client.has_collection(made):  # its dictionary and stop words, before anything is written
                self._adopt(self.schema.meta(made))
                break
        schema = self.schema
        if client.has_collection(self.chunks + MIGRATING):
            schema.finish_migration()
        if client.has_collection(self.chunks):
            schema.check(migrate)
        else:
            schema.create_chunks(self.chunks)
        if not client.has_collection(schema.registry):
            schema.create_registry()
        client.load_collection(self.chunks)
        client.load_collection(schema.registry)
        self.recover()
        self.writer.adopt_legacy_originals(self.legacy_originals)
        if is_lite(self.uri) and (migrate or self.exclusive_access()):
            self.fit_index()  # a Lite file grown past schema.IVF_FROM chunks: IVF_FLAT (nobody else searches now)

    def open_to_read(self) -> None:
        """Open an existing knowledge base only to read its documents and kept originals (`reindex
        --from`), whatever embedder it was made with."""
        client, registry = self.client, self.registry.name
        if not client.has_collection(registry):  # its chunks may be in an upgrade's collection: not read here
            raise StoreError(f"There is no knowledge base collection {self.collection!r} here; check the name "
                             "(milvus.collection of the knowledge base you copy from).")
        client.load_collection(registry)
        self.writer.adopt_legacy_originals(self.legacy_originals)

    def migrate(self) -> int:
        """Rebuild the chunk collection with the current layout, keeping every row (see Schema.migrate)."""
        return self.schema.migrate()

    def fit_index(self, ivf_from: int = IVF_FROM) -> DenseIndex:
        """Give the chunk collection the dense index its size calls for (schema.choose_index: on Lite FLAT, IVF_FLAT
        from `ivf_from` rows), rebuilding it when it has another; opening a Lite file with exclusive access, or to
        migrate (`python -m rag_core migrate`), does it. Returns the index it has."""
        return self.schema.fit_index(self.count_chunks(), ivf_from)

    def exclusive_access(self) -> bool:
        """Whether no other process can be writing to this store now: a Milvus Lite file this process
        opened alone (milvus.lite-mode = exclusive, behind our lock). Through the store host (shared mode)
        or a server, other processes may be writing right now. Recovery's rule is `writers.abandoned`.
        Never connects."""
        return is_lite(self.uri) and self.lite.mode == "exclusive"

    def recover(self) -> int:
        """Remove what interrupted writes left behind (see Writer.recover), and settle the chunk edits killed while
        their row was written (store.edits). Returns how many documents needed it."""
        exclusive = self.exclusive_access()
        recovered = self.writer.recover(exclusive=exclusive)
        if self.edits.pending():
            now = time.time_ns()

            def row_content(doc_id: str, key: str) -> str | None:
                index = key.rsplit("#chunk-", 1)[-1]
                return next((c.content for c in self.get_chunks(doc_id) if str(c.chunk_index) == index), None)

            self.edits.recover(row_content, lambda p: writers.abandoned(p, exclusive=exclusive, now_ns=now))
        if self.labels.pending():
            now = time.time_ns()
            self.labels.recover(self.relabel, lambda p: writers.abandoned(p, exclusive=exclusive, now_ns=now),
                                lambda: {d.doc_id: d.content_hash for d in self.list_documents()})
        return recovered

    # ---------------------------------------------------------------- writes
    def replace_document(self, doc: Document, chunks: Sequence[Chunk], vectors: np.ndarray,
                         fingerprint: str) -> WriteResult:
        """Write a new complete version of `doc` and retire the old one (see the module docstring)."""
        return self.replace_documents([NewVersion(doc, chunks, vectors, fingerprint)])[0]

    def replace_documents(self, items: Sequence[NewVersion]) -> list[WriteResult]:
        """`replace_document` for several documents with one round trip per step instead of one per
        document. Each document still switches versions atomically at its own commit row."""
        parts = self._connected()
        results = parts.writer.replace_documents(items, self.dim)
        parts.searcher.has_rows = True
        return results

    def rewrite_chunk(self, row_id: str, content: str, vector: np.ndarray, metadata: dict[str, Any]) -> None:
        """A chunk edited in place (store.edits records why): see writes.rewrite_chunk."""
        from .writes import rewrite_chunk

        rewrite_chunk(self.client, self.chunks, row_id, content, vector, metadata, self.bm25_terms)

    def add_chunk(self, chunk: StoredChunk, vector: np.ndarray) -> None:
        """A chunk a person added to its document (store.edits records it): see writes.add_chunk."""
        from .writes import add_chunk

        add_chunk(self.client, self.chunks, chunk, vector, self.bm25_terms)

    def relabel(self, doc_ids: Iterable[str]) -> int:
        """The chunk rows of `doc_ids` given the labels the labels file (store.labels) and the registry say they
        have: see writes.relabel. Returns the rows rewritten."""
        from .writes import relabel

        ids, labels = set(doc_ids), self.labels.all()
        return sum(relabel(self.client, self.chunks, d.doc_id, d.version,
                           document_labels(d.doc_id, d.extension, d.ingested_at, labels.get(d.doc_id)), self.bm25_terms)
                   for d in self.list_documents() if d.doc_id in ids)

    @contextlib.contextmanager
    def editing(self) -> Iterator[dict[str, str]]:
        """Around a chunk edit (store.edits: begin, the row written, finish): yields the fields naming this process
        as the pending change's writer, and recovery spares the change while it runs."""
        with writers.writing():
            yield writers.pending_fields()

    def delete_document(self, doc_id: str) -> bool:
        """Remove a document and all its chunks. Returns False when it was not indexed."""
        parts = self._connected()
        with self.lock():  # not between a chunk edit's read and its record (kb.chunk_edits)
            if not parts.writer.delete_document(doc_id):
                return False
            self.labels.forget([doc_id])
            self.edits.forget([doc_id])
        parts.searcher.has_rows = False  # maybe the last one: check again before the next BM25 search
        return True

    # ---------------------------------------------------------------- an embedder upgrade (milvus.upgrade)
    def stage(self, name: str, embedder_name: str, dim: int, *, dictionary: Sequence[str] | None = None,
              stop_words: Sequence[str] | None = None) -> None:
        """Collection `name` made ready to take this store's chunks embedded by `embedder_name` (`dim`-d), with a BM25
        `dictionary` and `stop_words` (None: the live collection's): kept when it was made for those (a job resumed),
        made (again) when not. The knowledge base's other chunk collections but the one in use go (what a swap killed
        before its drop, or a staging for another embedder, left)."""
        from . import upgrade

        present = list(self.client.list_collections())
        for leftover in [self.collection, *upgrades_of(self.collection, present)]:
            if leftover not in (self.chunks, name) and leftover in present:  # a killed swap's, another embedder's
                self.client.drop_collection(leftover)
        upgrade.stage(Schema(self.client, own_upgrade(self.collection, name), self.registry.name, embedder_name, dim,
                             on_lite=is_lite(self.uri),
                             dictionary=self.bm25_terms if dictionary is None else tuple(dictionary),
                             stop_words=self.stop_words if stop_words is None else tuple(stop_words)), name)

    def unstaged(self, name: str) -> list[tuple[str, str]]:
        """(row id, text to embed) of every chunk the staging `name` lacks or holds from other text (milvus.upgrade)."""
        from . import upgrade

        return upgrade.unstaged(self.client, self.chunks, own_upgrade(self.collection, name))

    def put_staged(self, name: str, ids: Sequence[str], vectors: np.ndarray | None = None) -> int:
        """The chunks `ids` written into the staging `name` with `vectors` (None: their live vectors, for a staging
        that changes only BM25). Returns how many (gone ones are not)."""
        from . import upgrade

        return upgrade.put(self.client, self.chunks, own_upgrade(self.collection, name), ids, vectors)

    def staged_count(self, name: str) -> tuple[int, int]:
        """(rows staged in `name`, rows of the live chunk collection)."""
        from . import upgrade

        return upgrade.count(self.client, own_upgrade(self.collection, name)), upgrade.count(self.client, self.chunks)

    def swap_staged(self, name: str) -> str:
        """Search and write the staging `name` from now on, with the embedder it was made for. Returns the chunk
        collection it replaces. The swap that lasts is the catalog's (kb.upgrade writes `milvus.chunks`)."""
        meta = self.schema.meta(own_upgrade(self.collection, name)) if self.client.has_collection(name) else {}
        if not meta:
            raise StoreError(f"There is no staged collection {name!r} to swap in.")
        old = self.chunks
        self.point_to(name)
        self.embedder_name, self.dim = str(meta["embedder"]), int(meta["dim"])
        self._adopt(meta)
        return old

    def _adopt(self, meta: Mapping[str, Any]) -> None:
        """The BM25 dictionary and stop words of the chunk collection whose description is `meta`."""
        terms = (tuple(meta.get("dictionary") or ()), tuple(meta.get("stop_words") or ()))
        if terms != (self.bm25_terms, self.stop_words):
            self.bm25_terms, self.stop_words = terms
            if self._parts is not None:
                self._parts = self._built_on(self._parts.client)

    def point_to(self, chunks: str) -> None:
        """Work on chunk collection `chunks` (the knowledge base's own name, or an upgrade's: `milvus.chunks`) from
        now on: the catalog, read after connecting, may say where they are (bootstrap.build_workbench)."""
        self.chunks = chunk_collection(self.collection, chunks)
        if self._parts is not None:
            self._parts = self._built_on(self._parts.client)

    def drop_chunks(self, name: str) -> None:
        """Drop chunk collection `name`, one of this knowledge base's but not the one in use (an upgrade's leftover,
        or the one an upgrade replaced)."""
        if name == self.chunks:
            raise StoreError(f"Collection {name!r} holds the chunks in use; it cannot be dropped.")
        own_upgrade(self.collection, name)
        if self.client.has_collection(name):
            self.client.drop_collection(name)

    def drop(self, spare: Collection[str] = (), *, originals: bool = True) -> list[str]:
        """Drop the collections and the kept originals, sparing what another knowledge base shares (see
        Writer.drop). Returns the collections kept."""
        kept = self.writer.drop(spare, originals=originals)
        if originals and self.collection not in kept:
            self.labels.drop()
            self.edits.drop()
        return kept

    # ---------------------------------------------------------------- reads
    def fingerprints(self, doc_ids: Iterable[str]) -> dict[str, IndexedVersion]:
        return self.registry.fingerprints(doc_ids)

    def list_documents(self) -> list[StoredDocument]:
        return self.registry.list_documents()

    def read_original(self, doc_id: str) -> bytes | None:
        return self.registry.read_original(doc_id)

    def disabled_keys(self, chunks: Iterable[StoredChunk]) -> set[str]:
        return self.edits.disabled_among(chunks)

    def is_empty(self) -> bool:
        return self.registry.is_empty()

    def count_chunks(self) -> int:
        return self.registry.count_chunks()

    def get_chunks(self, doc_id: str) -> list[StoredChunk]:
        return self.searcher.get_chunks(doc_id)

    def search_dense(self, vector: np.ndarray, k: int, filters: StoreFilters | None = None) -> list[SearchHit]:
        return self.searcher.search_dense(vector, k, filters)

    def search_bm25(self, text: str, k: int, filters: StoreFilters | None = None) -> list[SearchHit]:
        return self.searcher.search_bm25(text, k, filters)

    def bm25_term_scores(self, terms: Sequence[str], ids: Sequence[str]) -> dict[str, dict[str, float]]:
        return self.searcher.bm25_term_scores(terms, ids)

    def search_both(self, vector: np.ndarray, text: str, k: int,
                    filters: StoreFilters | None = None) -> tuple[list[SearchHit], list[SearchHit]]:
        """`search_dense(vector)` and `search_bm25(text)` judged by one registry view (one read, or none)."""
        return self.searcher.search_both(vector, text, k, filters)

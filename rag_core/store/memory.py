"""The ChunkStore in memory: the fake that passes the same contract as MilvusStore
(tests/contracts/store.py), for fast tests of everything above the store (ingest, the search port,
pages, routes) without Milvus. Nothing survives the process; `close` keeps the data, like a database
that is opened again.

It follows MilvusStore's write protocol (a pending version, its chunks, the commit that makes it active,
then the old version retired), so an interrupted write and `recover` behave as they do on Milvus Lite, and it has
every capability MilvusStore has (ports.KnowledgeStore: chunk edits and the rows they rewrite or add, labels and
relabelling, `editing`, the lock, `exclusive_access`, `drop` sparing collections), so the code above the store runs
the same path on both (tests/store/test_congruence.py compares them).
Channels: dense is cosine similarity; bm25 is Okapi BM25 (k1 1.2, b 0.75, Milvus's idf) over lower-cased
words and single CJK characters of the text folded to Simplified Chinese (text.fold, as MilvusStore's `bm25_text`),
counted over the active versions' chunks. Thread-safe.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import re
import threading
import uuid
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..access.groups import AccessFilter
from ..dictionary import key, with_aliases
from ..errors import StoreError
from ..files import FileLock
from ..names import collections_of
from ..ports import STORE_FILTER_FIELDS, StoreFilters
from ..records import (
    Document,
    IndexedVersion,
    NewVersion,
    SearchHit,
    StoredChunk,
    StoredDocument,
    WriteResult,
    search_text,
)
from ..scope import document_labels
from ..text import fold
from .edits import ChunkEdits
from .labels import DocumentLabels
from .milvus import filters as store_filters
from .milvus.rows import check_new_versions, chunk_row_id, search_hit, stored_chunk, utc_now, with_provenance

_TOKEN = re.compile(r"[\u3400-\u9fff]|[^\W_]+", re.UNICODE)
K1, B = 1.2, 0.75


def tokens(text: str) -> list[str]:
    """The BM25 terms of `text`: folded to Simplified Chinese first (text.fold), as MilvusStore folds `bm25_text`."""
    return _TOKEN.findall(fold(text).lower())


@dataclass
class _Version:
    doc: Document
    chunks: list[StoredChunk]
    vectors: np.ndarray  # unit rows, for cosine similarity
    fingerprint: str
    ingested_at: str
    original: bytes | None = None  # kept with the version, as MilvusStore keeps it in a file
    state: str = "pending"  # "pending" until the commit makes it "active"
    committed: int = 0  # commit order; the newest active version of a document is its active one
    terms: list[Counter] = field(default_factory=list)
    written: int = 0  # chunks the version was written with (its registry row's count: added chunks are not counted)


@dataclass
class _Staging:
    embedder: str
    dim: int
    dictionary: tuple[str, ...] = ()
    stop_words: tuple[str, ...] = ()
    rows: dict[str, tuple[str, dict[str, Any], np.ndarray]] = field(default_factory=dict)  # id -> content, meta, vector


class InMemoryChunkStore:
    """See the module docstring."""

    def __init__(self, name: str = "memory") -> None:
        self.collection = name
        self.lock = FileLock(None)
        self.labels = DocumentLabels(lock=self.lock)  # front matter and tags (store.labels), in memory here
        self.edits = ChunkEdits(lock=self.lock)  # disabled chunks (store.edits)
        self.embedder_name = ""
        self.dim = 0
        self._versions: dict[str, _Version] = {}
        self._commits = itertools.count(1)
        self._lock = threading.RLock()
        self._editing = 0  # changes being written (`editing`)
        self.chunks = name  # the "collection" searched: another after an embedder upgrade's swap
        self._staged: dict[str, _Staging] = {}  # an upgrade's staged vectors (`stage`)
        self.bm25_terms: tuple[str, ...] = ()  # its BM25 dictionary and stop words (rag_core.dictionary)
        self.stop_words: tuple[str, ...] = ()

    # ---------------------------------------------------------------- lifecycle
    def open(self, embedder_name: str, dim: int, *, migrate: bool = False) -> None:
        with self._lock:
            if self._versions and (self.embedder_name, self.dim) != (embedder_name, dim):
                raise StoreError(
                    f"Store {self.collection!r} was indexed with {self.embedder_name} ({self.dim}-d), but the "
                    f"configured embedder is {embedder_name} ({dim}-d); vectors from different models cannot "
                    "be compared.")
            self.embedder_name, self.dim = embedder_name, dim
            self.recover()

    def close(self) -> None:
        pass

    def drop(self, spare: Collection[str] = (), *, originals: bool = True) -> list[str]:
        """As MilvusStore.drop: the documents removed unless the collection is in `spare` (returned: the ones kept of
        its chunk collection and registry), the kept originals when `originals`, and with a collection not spared its
        labels and chunk edits too."""
        kept = [name for name in collections_of(self.collection)[:2] if name in spare]
        with self._lock:
            if self.collection not in kept:
                self._versions.clear()
            elif originals:
                for ver in self._versions.values():
                    ver.original = None
        if originals and self.collection not in kept:
            self.labels.drop()
            self.edits.drop()
        return kept

    def exclusive_access(self) -> bool:
        """Always: only this process can reach memory it owns."""
        return True

    def recover(self) -> int:
        """One process owns this store, so every pending version is abandoned, and so is every pending chunk edit or
        relabelling unless a change is being written (`editing`): settled as MilvusStore.recover settles them."""
        with self._lock:
            active = self._active()
            dead = [v for v, ver in self._versions.items()
                    if ver.state == "pending" or active.get(ver.doc.doc_id) is not ver]
            docs = {self._versions[v].doc.doc_id for v in dead}
            for version in dead:
                del self._versions[version]

        def abandoned(_: object) -> bool:
            return self._editing == 0

        if self.edits.pending():
            def row_content(doc_id: str, key: str) -> str | None:
                index = key.rsplit("#chunk-", 1)[-1]
                return next((c.content for c in self.get_chunks(doc_id) if str(c.chunk_index) == index), None)

            self.edits.recover(row_content, abandoned)
        self.labels.recover(self.relabel, abandoned, lambda: {d.doc_id: d.content_hash for d in self.list_documents()})
        return len(docs)

    def relabel(self, doc_ids: Iterable[str]) -> int:
        """The chunks of `doc_ids` given the labels the labels file says they have (as MilvusStore.relabel)."""
        ids, labels, rows = set(doc_ids), self.labels.all(), 0
        with self._lock:
            for doc_id, ver in self._active().items():
                if doc_id in ids:
                    own = document_labels(doc_id, ver.doc.extension, ver.ingested_at, labels.get(doc_id))
                    rows += sum(chunk.labels != own for chunk in ver.chunks)
                    ver.chunks = [replace(chunk, labels=own, metadata=with_provenance(chunk.metadata, own))
                                  for chunk in ver.chunks]
        return rows

    @contextlib.contextmanager
    def editing(self) -> Iterator[dict[str, str]]:
        """Around a change whose rows follow (store.edits, store.labels): one process owns this store, so no writer
        to name; `recover` spares pending changes while one runs."""
        with self._lock:
            self._editing += 1
        try:
            yield {}
        finally:
            with self._lock:
                self._editing -= 1

    def rewrite_chunk(self, row_id: str, content: str, vector: Any, metadata: dict[str, Any]) -> None:
        """One chunk row with new text, vector and metadata (same id, version and evidence key), as MilvusStore's
        upsert: whichever version holds the row."""
        with self._lock:
            for ver in self._versions.values():
                for i, chunk in enumerate(ver.chunks):
                    if chunk.id == row_id:
                        ver.chunks[i] = replace(chunk, content=content,
                                                metadata=with_provenance(metadata, chunk.labels))
                        ver.vectors[i] = _unit(vector)
                        ver.terms[i] = Counter(self._tokens(search_text(content, metadata)))
                        return
        raise StoreError(f"No chunk row {row_id!r} (the document was re-indexed meanwhile?); try again.")

    def add_chunk(self, chunk: StoredChunk, vector: Any) -> None:
        """A chunk a person added to its version, under the id of its place in that version (writing it again
        replaces it: one row). A version that is gone takes nothing (MilvusStore's row would never be read)."""
        row = replace(chunk, id=chunk_row_id(chunk.doc_id, chunk.version, chunk.chunk_index),
                      metadata=with_provenance(chunk.metadata, chunk.labels), labels=tuple(chunk.labels))
        with self._lock:
            ver = self._versions.get(chunk.version)
            if ver is None:
                return
            keep = [i for i, c in enumerate(ver.chunks) if c.id != row.id]
            chunks = [ver.chunks[i] for i in keep] + [row]
            vectors = np.vstack([ver.vectors[keep], _unit(vector)[None, :]])
            terms = [ver.terms[i] for i in keep] + [Counter(self._tokens(search_text(row.content, row.metadata)))]
            order = sorted(range(len(chunks)), key=lambda i: chunks[i].chunk_index)  # chunk order, as get_chunks reads
            ver.chunks, ver.vectors, ver.terms = [chunks[i] for i in order], vectors[order], [terms[i] for i in order]

    def _tokens(self, text: str) -> list[str]:
        """BM25's terms of `text` here: with the aliases of its dictionary terms, without its own stop words."""
        stop = {key(w) for w in self.stop_words}
        return [t for t in tokens(with_aliases(text, self.bm25_terms)) if t not in stop]

    # ---------------------------------------------------------------- an embedder upgrade (ports.UpgradableStore)
    def stage(self, name: str, embedder_name: str, dim: int, *, dictionary: Sequence[str] | None = None,
              stop_words: Sequence[str] | None = None) -> None:
        """As MilvusStore.stage: the staging `name` kept when it was made for this embedder, dictionary and stop words,
        else made (again)."""
        made = _Staging(embedder_name, dim, self.bm25_terms if dictionary is None else tuple(dictionary),
                        self.stop_words if stop_words is None else tuple(stop_words))
        with self._lock:
            self._staged = {n: staged for n, staged in self._staged.items() if n == name}  # as MilvusStore's leftovers
            found = self._staged.get(name)
            if found is None or (found.embedder, found.dim, found.dictionary, found.stop_words) != (
                    made.embedder, made.dim, made.dictionary, made.stop_words):
                self._staged[name] = made

    def _staging(self, name: str) -> _Staging:
        if name not in self._staged:
            raise StoreError(f"There is no staged collection {name!r}.")
        return self._staged[name]

    def _rows(self) -> dict[str, StoredChunk]:
        return {c.id: c for ver in self._versions.values() for c in ver.chunks}

    def unstaged(self, name: str) -> list[tuple[str, str]]:
        """As MilvusStore.unstaged: (row id, text to embed) of the chunks the staging lacks or holds from other text;
        staged rows of chunks gone or changed are removed."""
        with self._lock:
            staging, now = self._staging(name), self._rows()
            for row_id, (content, metadata, _) in list(staging.rows.items()):
                if row_id not in now or (now[row_id].content, dict(now[row_id].metadata)) != (content, metadata):
                    del staging.rows[row_id]
            return [(i, search_text(c.content, c.metadata)) for i, c in now.items() if i not in staging.rows]

    def put_staged(self, name: str, ids: Sequence[str], vectors: Any = None) -> int:
        with self._lock:
            staging, now = self._staging(name), self._rows()
            live = {c.id: ver.vectors[i] for ver in self._versions.values() for i, c in enumerate(ver.chunks)}
            written = 0
            for row_id, vector in zip(ids, vectors if vectors is not None else [live.get(i) for i in ids], strict=True):
                if row_id in now:
                    staging.rows[row_id] = (now[row_id].content, dict(now[row_id].metadata), _unit(vector))
                    written += 1
            return written

    def staged_count(self, name: str) -> tuple[int, int]:
        with self._lock:
            staged = self._staged.get(name)
            return (len(staged.rows) if staged else 0), len(self._rows())

    def swap_staged(self, name: str) -> str:
        """As MilvusStore.swap_staged: every chunk searched by its staged vector from now on (each must be staged)."""
        with self._lock:
            staging = self._staging(name)
            missing = [c.id for ver in self._versions.values() for c in ver.chunks if c.id not in staging.rows]
            if missing:
                raise StoreError(f"{len(missing)} chunks are not staged in {name!r}; stage them first.")
            for ver in self._versions.values():
                ver.vectors = np.array([staging.rows[c.id][2] for c in ver.chunks], dtype=np.float32).reshape(
                    len(ver.chunks), staging.dim)
            old, self.chunks = self.chunks, name
            self.embedder_name, self.dim = staging.embedder, staging.dim
            self.bm25_terms, self.stop_words = staging.dictionary, staging.stop_words
            for ver in self._versions.values():  # BM25 reads the text again with the new dictionary and stop words
                ver.terms = [Counter(self._tokens(search_text(c.content, c.metadata))) for c in ver.chunks]
            del self._staged[name]
            return old

    def drop_chunks(self, name: str) -> None:
        if name == self.chunks:
            raise StoreError(f"Collection {name!r} holds the chunks in use; it cannot be dropped.")
        with self._lock:
            self._staged.pop(name, None)

    # ---------------------------------------------------------------- writes
    def fingerprints(self, doc_ids: Iterable[str]) -> dict[str, IndexedVersion]:
        active = self._active()
        return {d: IndexedVersion(active[d].fingerprint, active[d].written, active[d].original is not None)
                for d in set(doc_ids) if d in active}

    def replace_documents(self, items: Sequence[NewVersion]) -> list[WriteResult]:
        check_new_versions(items, self.dim)
        old = self._active()
        ingested_at = utc_now()
        versions = []
        with self._lock:  # the pending versions, complete with their chunks
            for item in items:
                version = uuid.uuid4().hex[:16]
                vectors = np.asarray(item.vectors, dtype=np.float32)
                norms = np.linalg.norm(vectors, axis=1, keepdims=True)
                chunks = [stored_chunk(item.doc, c, version, len(item.chunks), ingested_at, item.labels)
                          for c in item.chunks]
                self._versions[version] = _Version(item.doc, chunks, vectors / np.where(norms == 0, 1, norms),
                                                   item.fingerprint, ingested_at, item.original,
                                                   terms=[Counter(self._tokens(c.search_text or c.text))
                                                          for c in item.chunks], written=len(chunks))
                versions.append(version)
        self._commit(versions)
        with self._lock:  # retire the versions that were active before
            for item in items:
                previous = old.get(item.doc.doc_id)
                if previous is not None:
                    self._versions = {v: ver for v, ver in self._versions.items() if ver is not previous}
        return [WriteResult(version=v, replaced=item.doc.doc_id in old) for item, v in zip(items, versions)]

    def _commit(self, versions: list[str]) -> None:
        """Make the pending versions active at once (a seam for tests that interrupt a write)."""
        with self._lock:
            for version in versions:
                self._versions[version].state = "active"
                self._versions[version].committed = next(self._commits)

    def delete_document(self, doc_id: str) -> bool:
        """As MilvusStore's: the document with every version, its labels and its chunk edits."""
        with self.lock(), self._lock:
            found = doc_id in self._active()
            self._versions = {v: ver for v, ver in self._versions.items() if ver.doc.doc_id != doc_id}
            if found:
                self.labels.forget([doc_id])
                self.edits.forget([doc_id])
            return found

    # ---------------------------------------------------------------- reads
    def _active(self) -> dict[str, _Version]:
        with self._lock:
            active: dict[str, _Version] = {}
            for ver in self._versions.values():
                seen = active.get(ver.doc.doc_id)
                if ver.state == "active" and (seen is None or ver.committed > seen.committed):
                    active[ver.doc.doc_id] = ver
            return active

    def list_documents(self) -> list[StoredDocument]:
        return [StoredDocument(doc_id=d, file_name=v.doc.file_name, extension=v.doc.extension,
                               size_bytes=v.doc.size_bytes, chunks=v.written, content_hash=v.doc.content_hash,
                               version=v.chunks[0].version, ingested_at=v.ingested_at,
                               has_original=v.original is not None)
                for d, v in sorted(self._active().items())]

    def get_chunks(self, doc_id: str) -> list[StoredChunk]:
        version = self._active().get(doc_id)
        return list(version.chunks) if version is not None else []

    def read_original(self, doc_id: str) -> bytes | None:
        version = self._active().get(doc_id)
        return version.original if version is not None else None

    def disabled_keys(self, chunks: Iterable[StoredChunk]) -> set[str]:
        return self.edits.disabled_among(chunks)

    def is_empty(self) -> bool:
        return not self._active()

    def count_chunks(self) -> int:
        return sum(v.written for v in self._active().values())

    def search_dense(self, vector: np.ndarray, k: int, filters: StoreFilters | None = None) -> list[SearchHit]:
        return self._dense(self._chunks(None), vector, k, filters)

    def search_bm25(self, text: str, k: int, filters: StoreFilters | None = None) -> list[SearchHit]:
        return self._bm25(self._chunks(None), text, k, filters)

    def search_both(self, vector: np.ndarray, text: str, k: int,
                    filters: StoreFilters | None = None) -> tuple[list[SearchHit], list[SearchHit]]:
        everything = self._chunks(None)  # one snapshot for both channels
        return self._dense(everything, vector, k, filters), self._bm25(everything, text, k, filters)

    def bm25_term_scores(self, terms: Sequence[str], ids: Sequence[str]) -> dict[str, dict[str, float]]:
        """Each term's BM25 score of the rows among `ids` holding it, the term searched alone over every active chunk
        (ports.BM25TermScorer; the statistics are the whole store's, as Milvus's are)."""
        everything, wanted = self._chunks(None), set(ids)
        if not terms or not wanted:
            return {}
        return {term: {h.id: h.score for h in self._bm25(everything, term, len(everything), None) if h.id in wanted}
                for term in terms}

    def _dense(self, everything: list[tuple[_Version, int, StoredChunk]], vector: np.ndarray, k: int,
               filters: StoreFilters | None) -> list[SearchHit]:
        wanted = store_filters.normalize(filters, STORE_FILTER_FIELDS)
        query = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(query))
        query = query / norm if norm else query
        access = store_filters.access_of(filters)
        scored = [(float(ver.vectors[i] @ query), chunk) for ver, i, chunk in everything
                  if _matches(chunk, wanted, access)]
        return self._ranked("dense", scored, k)

    def _bm25(self, everything: list[tuple[_Version, int, StoredChunk]], text: str, k: int,
              filters: StoreFilters | None) -> list[SearchHit]:
        """`everything`: one snapshot of the active chunks, so the statistics and the hits come from the same
        versions."""
        if not everything:
            return []
        wanted = store_filters.normalize(filters, STORE_FILTER_FIELDS)
        n = len(everything)
        lengths = {chunk.id: sum(ver.terms[i].values()) for ver, i, chunk in everything}
        avg = sum(lengths.values()) / n or 1.0
        df = Counter(t for ver, i, _ in everything for t in ver.terms[i])
        terms = set(self._tokens(text))
        scored, access = [], store_filters.access_of(filters)
        for ver, i, chunk in everything:
            if not _matches(chunk, wanted, access):
                continue
            tf = ver.terms[i]
            score = sum(math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) * tf[t] * (K1 + 1)
                        / (tf[t] + K1 * (1 - B + B * lengths[chunk.id] / avg)) for t in terms if tf[t])
            if score > 0:  # full-text search returns matching chunks only
                scored.append((score, chunk))
        return self._ranked("bm25", scored, k)

    def _chunks(self, filters: StoreFilters | None) -> list[tuple[_Version, int, StoredChunk]]:
        """The active versions' chunks that pass `filters`, from one consistent view of the store."""
        wanted, access = store_filters.normalize(filters, STORE_FILTER_FIELDS), store_filters.access_of(filters)
        return [(ver, i, chunk) for _, ver in sorted(self._active().items()) for i, chunk in enumerate(ver.chunks)
                if _matches(chunk, wanted, access)]

    @staticmethod
    def _ranked(channel: str, scored: list[tuple[float, StoredChunk]], k: int) -> list[SearchHit]:
        scored.sort(key=lambda pair: (-pair[0], pair[1].id))
        return [search_hit(chunk, score, channel, rank) for rank, (score, chunk) in enumerate(scored[:k], start=1)]


def _unit(vector: Any) -> np.ndarray:
    vector = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector


def _matches(chunk: StoredChunk, wanted: dict[str, tuple[str, ...]],
             access: AccessFilter | None = None) -> bool:
    if access is not None and not access.passes(chunk.doc_id):
        return False
    return all(store_filters.carries(chunk.labels, values) if name == "labels" else getattr(chunk, name) in values
               for name, values in wanted.items())

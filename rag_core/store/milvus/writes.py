"""Writing versions of documents: versioned replace (see milvus.store for the protocol), delete, drop."""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import asdict
from typing import Any, Collection, Sequence

import numpy as np

from ...kb.names import collections_of, same_as
from ...records import Chunk, Document, NewVersion, WriteResult
from . import filters, writers
from ..originals.files import KeptVersion, OriginalFiles, shared_with_variant
from .rows import check_new_versions, stored_chunk, utc_now
from .versions import ActiveVersions

INSERT_BATCH = 500
log = logging.getLogger(__name__)


class WritesMixin:
    """Versioned replace, delete and drop (part of MilvusStore)."""

    client: Any
    collection: str
    registry: str
    dim: int
    originals: OriginalFiles | None
    _has_rows: bool
    _versions: ActiveVersions

    def replace_document(self, doc: Document, chunks: Sequence[Chunk], vectors: np.ndarray,
                         fingerprint: str) -> WriteResult:
        """Write a new complete version of `doc` and retire the old one (see milvus.store)."""
        return self.replace_documents([NewVersion(doc, chunks, vectors, fingerprint)])[0]

    @writers.tracked  # recovery in this process spares its pending versions while it runs
    def replace_documents(self, items: Sequence[NewVersion]) -> list[WriteResult]:
        """`replace_document` for several documents with one round trip per step instead of one per
        document. Each document still switches versions atomically at its own commit row."""
        check_new_versions(items, self.dim)
        ids = sorted({item.doc.doc_id for item in items})
        old = self._newest_active(self._registry_rows(filters.one_of("doc_id", ids))) if ids else {}
        versions = [uuid.uuid4().hex[:16] for _ in items]
        pending = self._registry_insert([self._registry_row(item.doc, v, "pending", committed_ns=time.time_ns(),  # 1
                                                            **writers.pending_fields())
                                         for item, v in zip(items, versions)])
        ingested_at = utc_now()
        kept = [v for item, v in zip(items, versions) if item.original is not None]
        if self.originals is not None:  # the originals are part of the versions: written before the commit
            written_ns = time.time_ns()
            for item, version in zip(items, versions):
                if item.original is not None:
                    self.originals.write(version, item.original, kept_of_new(item, version, ingested_at, written_ns))
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
        self._versions.forget(ids)
        results = [WriteResult(version=v, replaced=item.doc.doc_id in old) for item, v in zip(items, versions)]
        self._has_rows = True
        retired = list(old.values())
        if self.originals is not None:
            try:
                self.originals.commit(kept)
                # Before the registry forgets them, so a kill cannot leave them looking like a lost database's.
                self.originals.retire(r["version"] for r in retired)
            except OSError as exc:  # committed all the same: the next open's recovery finishes the clean-up
                log.warning("could not mark kept originals after a commit (%s); recovery will", exc)
                return results
        if retired:  # 4
            self._delete_versions([r["version"] for r in retired])
        self.client.delete(self.registry, filter=filters.one_of("key", pending + [r["key"] for r in retired]))
        if self.originals is not None:
            self.originals.remove(r["version"] for r in retired)
        return results

    def _insert_batch(self, rows: list[dict[str, Any]], collection: str = "") -> None:
        """One insert call; a seam for tests that interrupt a write."""
        self.client.insert(collection or self.collection, rows)

    @staticmethod
    def _chunk_row(doc: Document, chunk: Chunk, vector: np.ndarray, version: str, total: int,
                   ingested_at: str) -> dict[str, Any]:
        row = asdict(stored_chunk(doc, chunk, version, total, ingested_at))
        row["vector"] = np.asarray(vector).tolist()
        return row

    def delete_document(self, doc_id: str) -> bool:
        """Remove a document and all its chunks. Returns False when it was not indexed."""
        rows = self._registry_rows(filters.equals("doc_id", doc_id))
        if doc_id not in self._newest_active(rows):
            return False
        if self.originals is not None:  # see replace_documents: retired before the registry forgets them
            self.originals.retire(r["version"] for r in rows)
        self.client.delete(self.collection, filter=filters.equals("doc_id", doc_id))
        self.client.delete(self.registry, filter=filters.equals("doc_id", doc_id))
        self._versions.forget([doc_id])
        self._has_rows = False  # maybe the last one: check again before the next BM25 search
        if self.originals is not None:
            self.originals.remove(r["version"] for r in rows)
        return True

    def drop(self, spare: Collection[str] = (), *, originals: bool = True) -> list[str]:
        """Drop the collections and (`originals`) the kept originals: an evaluation index rebuilt, tests, a
        deleted knowledge base. Returns the collections kept: those in `spare` (another knowledge base's, by
        the catalog), and any whose name the database also has in other letter case, because Milvus Lite stores
        the two in one table and dropping one empties the other (kb.names). The kept originals stay when their
        folder is also such a one's (a case-insensitive file system)."""
        present = list(self.client.list_collections())
        kept = []
        for name in collections_of(self.collection):
            if name not in present:
                continue
            if name in spare or same_as(name, present):
                kept.append(name)
                continue
            self.client.drop_collection(name)
        self._versions.forget()
        if originals and self.originals is not None and not shared_with_variant(self.originals.root, present):
            self.originals.clear()
        if kept:
            log.warning("kept collections %s of %s: they share their storage with another one (names that differ "
                        "only by case)", ", ".join(kept), self.collection)
        return kept


def kept_of_new(item: NewVersion, version: str, ingested_at: str, written_ns: int) -> KeptVersion:
    """The sidecar of a new version's kept original."""
    doc = item.doc
    return KeptVersion(doc_id=doc.doc_id, version=version, file_name=doc.file_name, extension=doc.extension,
                       size_bytes=doc.size_bytes, content_hash=doc.content_hash, fingerprint=item.fingerprint,
                       ingested_at=ingested_at, written_ns=written_ns, indexed_with=dict(item.indexed_with))

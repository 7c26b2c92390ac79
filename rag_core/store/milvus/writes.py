"""Writing versions of documents: versioned replace (see milvus.store for the protocol), delete, drop, and
recovery of what interrupted writes left behind."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import StoreError
from ...names import collections_of, same_as, upgrades_of
from ...records import Chunk, Document, NewVersion, StoredChunk, WriteResult
from ...scope import Labels
from ..originals.files import KeptVersion, OriginalFiles, adopt_legacy, shared_with_variant
from . import filters, writers
from .registry import Registry, newest_active, registry_row
from .rows import check_new_versions, chunk_row_id, stored_chunk, utc_now, with_bm25_text

INSERT_BATCH = 500
log = logging.getLogger(__name__)


class Writer:
    """Versioned replace, delete, drop and recovery (a part of MilvusStore): every change to the chunk collection,
    and to the registry through `registry`. `on_lite`: the database is a Milvus Lite file, which shares its data
    dir with the kept originals (see `recover`)."""

    def __init__(self, client: Any, collection: str, registry: Registry, originals: OriginalFiles | None, *,
                 on_lite: bool, kb: str = "", dictionary: Sequence[str] = ()) -> None:
        """`collection`: the chunk collection; `kb`: the knowledge base's name (default `collection`), whose
        collections `drop` drops (kb.upgrade may have put its chunks in another one); `dictionary`: the collection's
        BM25 dictionary."""
        self.client = client
        self.collection = collection
        self.kb = kb or collection
        self.dictionary = tuple(dictionary)  # the collection's BM25 dictionary (rag_core.dictionary)
        self.registry = registry
        self.originals = originals
        self.on_lite = on_lite

    @writers.tracked  # recovery in this process spares its pending versions while it runs
    def replace_documents(self, items: Sequence[NewVersion], dim: int) -> list[WriteResult]:
        """Write a new complete version of each document and retire the old one, with one round trip per step for
        the whole batch. Each document still switches versions atomically at its own commit row. `dim`: the
        store's vector size, checked before anything is written."""
        check_new_versions(items, dim)
        registry = self.registry
        ids = sorted({item.doc.doc_id for item in items})
        old = newest_active(registry.rows(filters.one_of("doc_id", ids))) if ids else {}
        versions = [uuid.uuid4().hex[:16] for _ in items]
        pending = registry.insert([registry_row(item.doc, v, "pending", committed_ns=time.time_ns(),  # 1
                                                **writers.pending_fields())
                                   for item, v in zip(items, versions)])
        ingested_at = utc_now()
        kept = [v for item, v in zip(items, versions) if item.original is not None]
        if self.originals is not None:  # the originals are part of the versions: written before the commit
            written_ns = time.time_ns()
            for item, version in zip(items, versions):
                if item.original is not None:
                    self.originals.write(version, item.original, kept_of_new(item, version, ingested_at, written_ns))
        rows = [chunk_row(item.doc, chunk, vector, version, len(item.chunks), ingested_at, item.labels, self.dictionary)
                for item, version in zip(items, versions) for chunk, vector in zip(item.chunks, item.vectors)]
        for start in range(0, len(rows), INSERT_BATCH):  # 2
            self.client.insert(self.collection, rows[start:start + INSERT_BATCH])
        committed_ns = time.time_ns()
        registry.insert([registry_row(  # 3: the commit point
            item.doc, version, "active", committed_ns=committed_ns, file_name=item.doc.file_name,
            extension=item.doc.extension, size_bytes=item.doc.size_bytes, chunks=len(item.chunks),
            content_hash=item.doc.content_hash, fingerprint=item.fingerprint, ingested_at=ingested_at)
            for item, version in zip(items, versions)])
        registry.versions.forget(ids)
        results = [WriteResult(version=v, replaced=item.doc.doc_id in old) for item, v in zip(items, versions)]
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
            self.delete_versions([r["version"] for r in retired])
        registry.delete(filters.one_of("key", pending + [r["key"] for r in retired]))
        if self.originals is not None:
            self.originals.remove(r["version"] for r in retired)
        return results

    def delete_versions(self, versions: list[str]) -> None:
        """Delete the chunks of these versions (retired, or left by an interrupted write)."""
        self.client.delete(self.collection, filter=filters.one_of("version", versions))

    def delete_document(self, doc_id: str) -> bool:
        """Remove a document and all its chunks. Returns False when it was not indexed."""
        rows = self.registry.rows(filters.equals("doc_id", doc_id))
        if doc_id not in newest_active(rows):
            return False
        if self.originals is not None:  # see replace_documents: retired before the registry forgets them
            self.originals.retire(r["version"] for r in rows)
        self.client.delete(self.collection, filter=filters.equals("doc_id", doc_id))
        self.registry.delete(filters.equals("doc_id", doc_id))
        self.registry.versions.forget([doc_id])
        if self.originals is not None:
            self.originals.remove(r["version"] for r in rows)
        return True

    def drop(self, spare: Collection[str] = (), *, originals: bool = True) -> list[str]:
        """Drop the collections and (`originals`) the kept originals: an evaluation index rebuilt, tests, a
        deleted knowledge base. Returns the collections kept: those in `spare` (another knowledge base's, by
        the catalog), and any whose name the database also has in other letter case, because Milvus Lite stores
        the two in one table and dropping one empties the other (names). The kept originals stay when their
        folder is also such a one's (a case-insensitive file system)."""
        present = list(self.client.list_collections())
        kept = []
        for name in [*collections_of(self.kb), *upgrades_of(self.kb, present)]:
            if name not in present:
                continue
            if name in spare or same_as(name, present):
                kept.append(name)
                continue
            self.client.drop_collection(name)
        self.registry.versions.forget()
        if originals and self.originals is not None and not shared_with_variant(self.originals.root, present):
            self.originals.clear()
        if kept:
            log.warning("kept collections %s of %s: they share their storage with another one (names that differ "
                        "only by case)", ", ".join(kept), self.kb)
        return kept

    def recover(self, *, exclusive: bool) -> int:
        """Remove what interrupted writes left behind: versions superseded by a newer active one, and pending
        versions whose writer is gone (the rule is `writers.abandoned`; `exclusive`: no other process can be
        writing, see MilvusStore.exclusive_access). Returns how many documents needed it."""
        now = time.time_ns()

        def abandoned(row: Mapping[str, Any]) -> bool:
            return writers.abandoned(row, exclusive=exclusive, now_ns=now)

        registry = self.registry
        rows = registry.rows('doc_id != ""')
        active = newest_active(rows)
        dead = [r for r in rows if (r["state"] == "active" and r["key"] != active[r["doc_id"]]["key"])
                or (r["state"] == "pending" and abandoned(r))]
        if dead:
            registry.versions.forget(r["doc_id"] for r in dead)
            # A pending row whose version was committed only lost its clean-up: keep those chunks.
            live = {r["version"] for r in active.values()}
            if versions := sorted({r["version"] for r in dead} - live):
                if self.originals is not None:  # see originals.files: retired before the registry forgets them
                    self.originals.retire(versions)
                self.delete_versions(versions)
            registry.delete(filters.one_of("key", [r["key"] for r in dead]))
            log.info("recovered %d interrupted document writes", len({r["doc_id"] for r in dead}))
        if self.originals is not None:
            dead_keys = {r["key"] for r in dead}
            # Milvus Lite: the database and the originals share a data dir, so a committed version it does
            # not have is a lost database's. A server: other machines delete documents whose originals are
            # here; only a server that has no document at all (its data lost) leaves them.
            # Shared mode (the store host, a server) waits 6 hours before removing files no row refers to, as
            # their write may still run in another process; not for the versions of writers known to be gone (a
            # killed process on this machine): those are removed now, at the next start of any store.
            gone = {
                r["version"] for r in dead if r["state"] == "pending" and writers.known_gone(r, exclusive=exclusive)
            }
            self.originals.reconcile({r["version"]: kept_of_row(r) for r in active.values()},
                                     spare={r["version"] for r in rows if r["key"] not in dead_keys},
                                     min_age_s=0.0 if exclusive else writers.ABANDONED_AFTER_S,
                                     keep_committed=self.on_lite or not rows, gone=gone)
        return len({r["doc_id"] for r in dead})

    def adopt_legacy_originals(self, legacy: Path | None) -> None:
        """Existing data dirs kept originals as `uploads/<collection>/<doc_id>` (`legacy`): move them into place."""
        if self.originals is None or legacy is None or not legacy.is_dir():
            return
        rows = newest_active(self.registry.rows('state == "active"'))
        missing = {d: kept_of_row(r) for d, r in rows.items() if not self.originals.has(r["version"])}
        try:
            adopt_legacy(legacy, self.originals, missing, _text_hash)
        except OSError as exc:  # the documents stay listed without an original; nothing is lost
            log.warning("could not adopt the kept originals in %s: %s", legacy, exc)


def rewrite_chunk(client: Any, collection: str, row_id: str, content: str, vector: np.ndarray,
                  metadata: Mapping[str, Any], dictionary: Sequence[str] = ()) -> None:
    """One chunk row with new text, vector and metadata, in one upsert (same id, version and evidence key). The
    upsert lands whole or not at all (a writer killed mid-way leaves the old row or the new one, never neither),
    though Milvus applies it as a delete plus an insert: a reader at that instant may miss the chunk once."""
    from .schema import CHUNK_FIELDS

    rows = client.query(collection, filter=filters.equals("id", row_id), output_fields=CHUNK_FIELDS,
                        consistency_level="Strong")
    if not rows:
        raise StoreError(f"No chunk row {row_id!r} (the document was re-indexed meanwhile?); try again.")
    row = {name: rows[0][name] for name in CHUNK_FIELDS}
    row.update(content=content, metadata=dict(metadata), vector=np.asarray(vector, dtype=np.float32).tolist())
    client.upsert(collection, [with_bm25_text(row, dictionary)])


def add_chunk(client: Any, collection: str, chunk: StoredChunk, vector: np.ndarray,
              dictionary: Sequence[str] = ()) -> None:
    """A chunk a person added to a version of its document, in one upsert under the row id of its place in that
    version (idempotent: writing it again after a crash leaves one row)."""
    row = asdict(chunk)
    row["id"] = chunk_row_id(chunk.doc_id, chunk.version, chunk.chunk_index)
    row.update(metadata=dict(chunk.metadata), vector=np.asarray(vector, dtype=np.float32).tolist(),
               labels=list(chunk.labels))
    client.upsert(collection, [with_bm25_text(row, dictionary)])


def chunk_row(doc: Document, chunk: Chunk, vector: np.ndarray, version: str, total: int,
              ingested_at: str, labels: Labels | None = None, dictionary: Sequence[str] = ()) -> dict[str, Any]:
    row = asdict(stored_chunk(doc, chunk, version, total, ingested_at, labels))
    row.update(vector=np.asarray(vector).tolist(), labels=list(row["labels"]))
    return with_bm25_text(row, dictionary)


def relabel(client: Any, collection: str, doc_id: str, version: str, labels: Sequence[str],
            dictionary: Sequence[str] = ()) -> int:
    """The chunk rows of one version of a document given `labels` (its tags or front matter changed), by upserts of
    whole rows: a reader sees each row with the old labels or the new ones. Returns the rows rewritten."""
    from .schema import CHUNK_FIELDS, QUERY_LIMIT

    rows = client.query(collection, filter=filters.all_of(filters.equals("doc_id", doc_id),
                                                          filters.equals("version", version)),
                        output_fields=[*CHUNK_FIELDS, "vector"], limit=QUERY_LIMIT, consistency_level="Strong")
    stale = [with_bm25_text({**{name: row[name] for name in [*CHUNK_FIELDS, "vector"]}, "labels": list(labels)},
                            dictionary) for row in rows if list(row.get("labels") or []) != list(labels)]
    for start in range(0, len(stale), INSERT_BATCH):
        client.upsert(collection, stale[start:start + INSERT_BATCH])
    return len(stale)


def kept_of_new(item: NewVersion, version: str, ingested_at: str, written_ns: int) -> KeptVersion:
    """The sidecar of a new version's kept original."""
    doc = item.doc
    return KeptVersion(doc_id=doc.doc_id, version=version, file_name=doc.file_name, extension=doc.extension,
                       size_bytes=doc.size_bytes, content_hash=doc.content_hash, fingerprint=item.fingerprint,
                       ingested_at=ingested_at, written_ns=written_ns, indexed_with=dict(item.indexed_with))


def kept_of_row(row: Mapping[str, Any]) -> KeptVersion:
    """What the registry says of a version, as its kept original's sidecar says it (a committed one)."""
    return KeptVersion(doc_id=row["doc_id"], version=row["version"], file_name=row["file_name"],
                       extension=row["extension"], size_bytes=int(row["size_bytes"]),
                       content_hash=row["content_hash"], fingerprint=row["fingerprint"],
                       ingested_at=row["ingested_at"], written_ns=int(row["committed_ns"]), state="committed")


def _text_hash(data: bytes, doc_id: str) -> str:
    """The content hash of the text `data` decodes to, exactly as ingest computes it."""
    from ...loaders import load_bytes  # the store needs the loader only to adopt old-layout originals

    return load_bytes(data, doc_id, max_bytes=len(data)).content_hash

"""The document registry (`<collection>_docs`): which version of each document is active, and recovery.

Rows are only ever inserted or deleted, never updated in place (see milvus.store for the protocol).
The active version of a document is its newest `active` row; `recover` removes what interrupted writes
left behind.
"""

from __future__ import annotations

import hashlib
import logging
import time
from pathlib import Path
from typing import Any, Iterable, Mapping

from ...records import Document, IndexedVersion, StoredDocument
from . import filters, writers
from ..lite.connection import is_lite
from ..originals.files import KeptVersion, OriginalFiles, adopt_legacy
from .schema import QUERY_LIMIT, REGISTRY_FIELDS
from .versions import ActiveVersions

log = logging.getLogger(__name__)


class RegistryMixin:
    """Reading and writing registry rows, listing documents, recovery, kept originals (part of MilvusStore)."""

    client: Any
    uri: str
    lite: Any  # connection.LiteOptions
    collection: str
    registry: str
    originals: OriginalFiles | None
    legacy_originals: Path | None
    _versions: ActiveVersions

    def _registry_rows(self, expr: str) -> list[dict[str, Any]]:
        rows = self.client.query(self.registry, filter=expr, output_fields=REGISTRY_FIELDS, limit=QUERY_LIMIT,
                                 consistency_level="Strong")  # a server's default may not show the last commit
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

    def exclusive_access(self) -> bool:
        """Whether no other process can be writing to this store now: a Milvus Lite file this process
        opened alone (milvus.lite-mode = exclusive, behind our lock). Through the store host (shared mode)
        or a server, other processes may be writing right now. Recovery's rule is `writers.abandoned`."""
        return is_lite(self.uri) and self.lite.mode == "exclusive"

    def recover(self) -> int:
        """Remove what interrupted writes left behind: versions superseded by a newer active one, and
        pending versions whose writer is gone (the rule is `writers.abandoned`: another process may be
        writing right now, through the store host or a shared server). Returns how many documents needed it."""
        now = time.time_ns()
        exclusive = self.exclusive_access()

        def abandoned(row: Mapping[str, Any]) -> bool:
            return writers.abandoned(row, exclusive=exclusive, now_ns=now)

        rows = self._registry_rows('doc_id != ""')
        active = self._newest_active(rows)
        dead = [r for r in rows if (r["state"] == "active" and r["key"] != active[r["doc_id"]]["key"])
                or (r["state"] == "pending" and abandoned(r))]
        if dead:
            self._versions.forget(r["doc_id"] for r in dead)
            # A pending row whose version was committed only lost its clean-up: keep those chunks.
            live = {r["version"] for r in active.values()}
            if versions := sorted({r["version"] for r in dead} - live):
                if self.originals is not None:  # see originals.files: retired before the registry forgets them
                    self.originals.retire(versions)
                self._delete_versions(versions)
            self.client.delete(self.registry, filter=filters.one_of("key", [r["key"] for r in dead]))
            log.info("recovered %d interrupted document writes", len({r["doc_id"] for r in dead}))
        if self.originals is not None:
            dead_keys = {r["key"] for r in dead}
            # Milvus Lite: the database and the originals share a data dir, so a committed version it does
            # not have is a lost database's. A server: other machines delete documents whose originals are
            # here; only a server that has no document at all (its data lost) leaves them.
            # Shared mode (the store host, a server) waits 6 hours before removing files no row refers to, as
            # their write may still run in another process; not for the versions of writers known to be gone (a
            # killed process on this machine): those are removed now, at the next start of any store.
            gone = {r["version"] for r in dead if r["state"] == "pending" and writers.known_gone(r, exclusive=exclusive)}
            self.originals.reconcile({r["version"]: kept_of_row(r) for r in active.values()},
                                     spare={r["version"] for r in rows if r["key"] not in dead_keys},
                                     min_age_s=0.0 if exclusive else writers.ABANDONED_AFTER_S,
                                     keep_committed=is_lite(self.uri) or not rows, gone=gone)
        return len({r["doc_id"] for r in dead})

    def _adopt_legacy_originals(self) -> None:
        """Existing data dirs kept originals as `uploads/<collection>/<doc_id>`: move them into place."""
        if self.originals is None or self.legacy_originals is None or not self.legacy_originals.is_dir():
            return
        rows = self._newest_active(self._registry_rows('state == "active"'))
        missing = {d: kept_of_row(r) for d, r in rows.items() if not self.originals.has(r["version"])}
        try:
            adopt_legacy(self.legacy_originals, self.originals, missing, _text_hash)
        except OSError as exc:  # the documents stay listed without an original; nothing is lost
            log.warning("could not adopt the kept originals in %s: %s", self.legacy_originals, exc)

    def fingerprints(self, doc_ids: Iterable[str]) -> dict[str, IndexedVersion]:
        """doc_id -> its active version, for the indexed ones among `doc_ids`."""
        ids = sorted(set(doc_ids))
        if not ids:
            return {}
        rows = self._registry_rows(filters.all_of(filters.one_of("doc_id", ids), 'state == "active"'))
        return {d: IndexedVersion(r["fingerprint"], int(r["chunks"]), self._has_original(r["version"]))
                for d, r in self._newest_active(rows).items()}

    # ---------------------------------------------------------------- reads
    def list_documents(self) -> list[StoredDocument]:
        rows = self._newest_active(self._registry_rows('state == "active"')).values()
        docs = [StoredDocument(doc_id=r["doc_id"], file_name=r["file_name"], extension=r["extension"],
                               size_bytes=int(r["size_bytes"]), chunks=int(r["chunks"]),
                               content_hash=r["content_hash"], version=r["version"],
                               ingested_at=r["ingested_at"], has_original=self._has_original(r["version"]))
                for r in rows]
        return sorted(docs, key=lambda d: d.doc_id)

    def read_original(self, doc_id: str) -> bytes | None:
        row = self._active_row(doc_id)
        if row is None or self.originals is None:
            return None
        return self.originals.read(row["version"])

    def _has_original(self, version: str) -> bool:
        return self.originals is not None and self.originals.has(version)

    def is_empty(self) -> bool:
        return not self.client.query(self.registry, filter='state == "active"', output_fields=["doc_id"], limit=1,
                                     consistency_level="Strong")

    def count_chunks(self) -> int:
        return sum(d.chunks for d in self.list_documents())

    def _active_versions(self, doc_ids: Iterable[str]) -> dict[str, str]:
        """doc_id -> its active version, read from the registry now (and remembered: milvus.versions)."""
        ids = sorted(set(doc_ids))
        if not ids:
            return {}
        token = self._versions.begin_read()
        rows = self.client.query(self.registry, filter=filters.all_of(filters.one_of("doc_id", ids),
                                                                      'state == "active"'),
                                 output_fields=["doc_id", "version", "state", "committed_ns"], limit=QUERY_LIMIT,
                                 consistency_level="Strong")
        active = {doc_id: row["version"] for doc_id, row in self._newest_active(rows).items()}
        self._versions.remember(token, ids, active)
        return active


def _text_hash(data: bytes, doc_id: str) -> str:
    """The content hash of the text `data` decodes to, exactly as ingest computes it."""
    from ...loaders import load_bytes  # the store needs the loader only to adopt old-layout originals

    return load_bytes(data, doc_id, max_bytes=len(data)).content_hash


def kept_of_row(row: Mapping[str, Any]) -> KeptVersion:
    """What the registry says of a version, as its kept original's sidecar says it (a committed one)."""
    return KeptVersion(doc_id=row["doc_id"], version=row["version"], file_name=row["file_name"],
                       extension=row["extension"], size_bytes=int(row["size_bytes"]),
                       content_hash=row["content_hash"], fingerprint=row["fingerprint"],
                       ingested_at=row["ingested_at"], written_ns=int(row["committed_ns"]), state="committed")

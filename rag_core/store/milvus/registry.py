"""The document registry (`<collection>_docs`): which version of each document is active, and what is listed.

Rows are only ever inserted or deleted, never updated in place (see milvus.store for the protocol).
The active version of a document is its newest `active` row; the writer (milvus.writes) inserts and deletes
them, and removes what interrupted writes left behind.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from ...records import Document, IndexedVersion, StoredDocument
from ..originals.files import OriginalFiles
from . import filters
from .schema import QUERY_LIMIT, REGISTRY_FIELDS
from .versions import ActiveVersions


class Registry:
    """Reading and writing registry rows, listing documents and their kept originals (a part of MilvusStore).
    `versions` remembers what the registry said a moment ago (milvus.versions): kept by the store across
    reconnects, forgotten by the writer for the documents it writes."""

    def __init__(self, client: Any, name: str, originals: OriginalFiles | None,
                 versions: ActiveVersions | None = None) -> None:
        self.client = client
        self.name = name
        self.originals = originals
        self.versions = versions if versions is not None else ActiveVersions()

    def rows(self, expr: str) -> list[dict[str, Any]]:
        rows = self.client.query(self.name, filter=expr, output_fields=REGISTRY_FIELDS, limit=QUERY_LIMIT,
                                 consistency_level="Strong")  # a server's default may not show the last commit
        if len(rows) < QUERY_LIMIT:
            return rows
        rows = []  # more than one window: page through all of them
        iterator = self.client.query_iterator(self.name, batch_size=1000, filter=expr, output_fields=REGISTRY_FIELDS)
        try:
            while batch := iterator.next():
                rows.extend(batch)
        finally:
            iterator.close()
        return rows

    def active_row(self, doc_id: str) -> dict[str, Any] | None:
        return newest_active(self.rows(filters.equals("doc_id", doc_id))).get(doc_id)

    def insert(self, rows: list[dict[str, Any]]) -> list[str]:
        """Insert registry rows (see `registry_row`); returns their keys."""
        self.client.insert(self.name, rows)
        return [row["key"] for row in rows]

    def delete(self, expr: str) -> None:
        self.client.delete(self.name, filter=expr)

    def fingerprints(self, doc_ids: Iterable[str]) -> dict[str, IndexedVersion]:
        """doc_id -> its active version, for the indexed ones among `doc_ids`."""
        ids = sorted(set(doc_ids))
        if not ids:
            return {}
        rows = self.rows(filters.all_of(filters.one_of("doc_id", ids), 'state == "active"'))
        return {d: IndexedVersion(r["fingerprint"], int(r["chunks"]), self.has_original(r["version"]))
                for d, r in newest_active(rows).items()}

    def list_documents(self) -> list[StoredDocument]:
        rows = newest_active(self.rows('state == "active"')).values()
        docs = [StoredDocument(doc_id=r["doc_id"], file_name=r["file_name"], extension=r["extension"],
                               size_bytes=int(r["size_bytes"]), chunks=int(r["chunks"]),
                               content_hash=r["content_hash"], version=r["version"],
                               ingested_at=r["ingested_at"], has_original=self.has_original(r["version"]))
                for r in rows]
        return sorted(docs, key=lambda d: d.doc_id)

    def read_original(self, doc_id: str) -> bytes | None:
        row = self.active_row(doc_id)
        if row is None or self.originals is None:
            return None
        return self.originals.read(row["version"])

    def has_original(self, version: str) -> bool:
        return self.originals is not None and self.originals.has(version)

    def is_empty(self) -> bool:
        return not self.client.query(self.name, filter='state == "active"', output_fields=["doc_id"], limit=1,
                                     consistency_level="Strong")

    def count_chunks(self) -> int:
        return sum(d.chunks for d in self.list_documents())

    def active_versions(self, doc_ids: Iterable[str]) -> dict[str, str]:
        """doc_id -> its active version, read from the registry now (and remembered: milvus.versions)."""
        ids = sorted(set(doc_ids))
        if not ids:
            return {}
        token = self.versions.begin_read()
        rows = self.client.query(self.name, filter=filters.all_of(filters.one_of("doc_id", ids), 'state == "active"'),
                                 output_fields=["doc_id", "version", "state", "committed_ns"], limit=QUERY_LIMIT,
                                 consistency_level="Strong")
        active = {doc_id: row["version"] for doc_id, row in newest_active(rows).items()}
        self.versions.remember(token, ids, active)
        return active


def newest_active(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """doc_id -> its newest active registry row."""
    active: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row["state"] == "active":
            seen = active.get(row["doc_id"])
            if seen is None or (row["committed_ns"], row["version"]) > (seen["committed_ns"], seen["version"]):
                active[row["doc_id"]] = dict(row)
    return active


def registry_row(doc: Document, version: str, state: str, **fields: Any) -> dict[str, Any]:
    """A registry row of `doc`'s `version` in `state` (pending, active); `fields`: the rest of what it records."""
    key = hashlib.sha256(f"{doc.doc_id}\x00{version}\x00{state}".encode()).hexdigest()[:32]
    return {"key": key, "doc_id": doc.doc_id, "version": version, "state": state, "committed_ns": 0,
            "file_name": "", "extension": "", "size_bytes": 0, "chunks": 0, "content_hash": "",
            "fingerprint": "", "ingested_at": "", "_unused": [0.0, 0.0], **fields}


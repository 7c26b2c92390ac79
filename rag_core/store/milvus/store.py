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

from pathlib import Path
from typing import Any

from ...errors import StoreError
from ...records import NewVersion, WriteResult
from ..lite import connection
from .coalesce import Coalescer
from ..lite.connection import is_lite  # noqa: F401 - re-exported: which kind of Milvus a URI names
from ..originals.files import OriginalFiles
from .registry import RegistryMixin
from .schema import CHUNK_FIELDS, MIGRATING, SchemaMixin, check_collection_name
from .search import SearchMixin
from .versions import ActiveVersions
from .writes import WritesMixin

__all__ = ["CHUNK_FIELDS", "MilvusStore", "NewVersion", "WriteResult", "is_lite"]


class MilvusStore(SchemaMixin, RegistryMixin, WritesMixin, SearchMixin):
    """The chunk collection and its registry: the ChunkStore (rag_core.ports) on Milvus. Built by
    `bootstrap`; connects lazily.

    Each responsibility lives in its own module: connection (Milvus Lite or a server), schema (layout,
    checks, migration), registry (active versions, recovery), writes (versioned replace, delete) and
    search (chunk reads, dense and BM25)."""

    def __init__(self, uri: str, collection: str, token: str = "", timeout: float = 60.0, *,
                 lite: connection.LiteOptions | None = None, originals: Path | None = None,
                 legacy_originals: Path | None = None) -> None:
        """`lite`: how a Milvus Lite file is reached (shared through the store host, or exclusive: see
        connection); `originals`: the folder for this collection's kept originals (None: keep none);
        `legacy_originals`: where older versions kept them (`uploads/<collection>`), adopted on open."""
        self.uri = uri
        self.lite = lite or connection.LiteOptions(collection=collection)
        self.collection = check_collection_name(collection)
        self.registry = f"{collection}_docs"
        self.originals = OriginalFiles(originals) if originals is not None else None
        self.legacy_originals = legacy_originals
        self._token = token
        self._timeout = timeout
        self._client: Any = None
        self._has_rows = False  # known to hold chunks (set by writes and hits; reset by deletes)
        self._versions = ActiveVersions()  # what the registry said a moment ago (see milvus.versions)
        self._coalesce = Coalescer(self._search_batch)  # concurrent searches share requests (milvus.coalesce)
        self.embedder_name = ""
        self.dim = 0

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = connection.connect(self.uri, self._token, self._timeout, self.lite)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

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
        self._adopt_legacy_originals()

    def open_to_read(self) -> None:
        """Open an existing knowledge base only to read its documents and kept originals (`reindex
        --from`), whatever embedder it was made with."""
        client = self.client
        if not (client.has_collection(self.collection) and client.has_collection(self.registry)):
            raise StoreError(f"There is no knowledge base collection {self.collection!r} here; check the name "
                             "(milvus.collection of the knowledge base you copy from).")
        client.load_collection(self.registry)
        self._adopt_legacy_originals()


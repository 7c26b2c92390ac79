"""The catalog of knowledge bases in memory: the fake that passes the same contract as MilvusCatalog
(tests/contracts/catalog.py), for fast tests of what sits above it. Same write protocol (insert the new
entry, then retire the older ones of its name); thread-safe; nothing survives the process.

`InMemoryCatalog` is a catalog without a database: nothing is stored, so the knowledge-base operations (kb.manage)
open and drop nothing with it. `InMemoryDatabaseCatalog` is kept with in-memory stores as MilvusCatalog is kept in
their database, a ports.DatabaseCatalog passing the same contract."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Mapping
from typing import Any

from ..records import KnowledgeBase
from ..store.memory import InMemoryChunkStore
from .catalog import active, newest, stamped, unfinished_of
from .names import CATALOG, REGISTRY_SUFFIX


class InMemoryCatalog:
    def __init__(self) -> None:
        self._rows: list[tuple[str, KnowledgeBase]] = []
        self._keys = itertools.count()
        self._lock = threading.Lock()

    def _entries(self) -> dict[str, KnowledgeBase]:
        with self._lock:
            return newest(list(self._rows))

    def list_knowledge_bases(self) -> list[KnowledgeBase]:
        return active(self._entries())

    def get(self, name: str) -> KnowledgeBase | None:
        return next((kb for kb in active(self._entries()) if kb.name == name), None)

    def unfinished(self) -> list[KnowledgeBase]:
        return unfinished_of(self._entries())

    def write(self, kb: KnowledgeBase) -> KnowledgeBase:
        with self._lock:
            old = [row for row in self._rows if row[1].name == kb.name]
            kb = stamped(kb, (e for _, e in old))
            self._rows.append((f"{next(self._keys):016d}", kb))
            self._rows = [row for row in self._rows if row not in old]
        return kb

    def forget(self, name: str) -> None:
        with self._lock:
            self._rows = [row for row in self._rows if row[1].name != name]

    def close(self) -> None:
        pass


class InMemoryDatabaseCatalog(InMemoryCatalog):
    """The catalog and the in-memory stores of one database (`store(name)` makes or finds a knowledge base's): its
    collections are the catalog's, and each store's chunks and registry. `created`: as MilvusCatalog's, whether this
    open made the catalog (True: a database from before knowledge bases, whose collections get adopted)."""

    def __init__(self, *, created: bool = False) -> None:
        super().__init__()
        self.created = created
        self.stores: dict[str, InMemoryChunkStore] = {}

    def store(self, name: str) -> InMemoryChunkStore:
        with self._lock:
            return self.stores.setdefault(name, InMemoryChunkStore(name))

    def list_collections(self) -> list[str]:
        with self._lock:
            return [CATALOG, *(c for name in self.stores for c in (name, name + REGISTRY_SUFFIX))]

    def has_collection(self, name: str) -> bool:
        return name in self.list_collections()

    def collection_meta(self, name: str) -> Mapping[str, Any]:
        store = self.stores.get(name)
        if store is None or not store.embedder_name:
            return {}
        return {"app": "rag-workbench", "embedder": store.embedder_name, "dim": store.dim}

    def sample_fingerprint(self, name: str) -> tuple[str, str] | None:
        store = self.stores.get(name)
        if store is None or not (docs := store.list_documents()):
            return None
        first = docs[0]
        return store.fingerprints([first.doc_id])[first.doc_id].fingerprint, first.content_hash

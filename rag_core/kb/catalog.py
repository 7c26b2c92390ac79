"""The catalog of knowledge bases on Milvus: one small collection (`rag_knowledge_bases`) in the same database
as the knowledge bases, so every process using that database (the app, the HTTP API, CLI commands; several
machines on one Milvus server) sees the same knowledge bases with the same settings.

Entries are written like the document registry's rows (see store.milvus): only ever inserted or deleted,
never updated in place. Writing an entry inserts the new row first, then deletes the older rows of that name;
the newest row of a name (by write time) is its entry, so a reader sees the old entry or the new one, never
none. A process killed between the two steps leaves an older row that the next write or `forget` removes.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from ..errors import StoreError
from ..names import CATALOG, REGISTRY_SUFFIX
from ..records import KnowledgeBase
from ..store.milvus import filters

FIELDS = ["key", "name", "state", "settings", "created_at", "note", "committed_ns"]
STATES = ("active", "creating", "deleted")
QUERY_LIMIT = 16384
# The key under which an entry's provenance (KnowledgeBase.provenance) rides in its settings' JSON: the catalog's
# collection keeps its fields, so a catalog made before provenance existed reads and writes it unchanged, and a
# reader that knows nothing of it drops it with the other keys that are not settings (kb.settings.apply).
PROVENANCE = "_provenance"


def newest(rows: Iterable[tuple[str, KnowledgeBase]]) -> dict[str, KnowledgeBase]:
    """name -> its entry: the newest of its (row key, entry) rows, ties broken alike in every process."""
    found: dict[str, tuple[tuple[int, str], KnowledgeBase]] = {}
    for key, kb in rows:
        order = (kb.committed_ns, key)
        if kb.name not in found or order > found[kb.name][0]:
            found[kb.name] = (order, kb)
    return {name: kb for name, (_, kb) in found.items()}


def active(entries: Mapping[str, KnowledgeBase]) -> list[KnowledgeBase]:
    """The listed knowledge bases among `entries` (name -> newest entry), by name."""
    return sorted((kb for kb in entries.values() if kb.state == "active"), key=lambda kb: kb.name)


def unfinished_of(entries: Mapping[str, KnowledgeBase]) -> list[KnowledgeBase]:
    """Copies still being made and deletes not finished, oldest first (what recovery looks at)."""
    return sorted((kb for kb in entries.values() if kb.state != "active"), key=lambda kb: kb.committed_ns)


def settings_json(kb: KnowledgeBase) -> dict[str, Any]:
    """What the `settings` field holds: the settings, and the provenance (when there is one) under PROVENANCE."""
    return {**kb.settings, PROVENANCE: dict(kb.provenance)} if kb.provenance else dict(kb.settings)


def stamped(kb: KnowledgeBase, older: Iterable[KnowledgeBase]) -> KnowledgeBase:
    """`kb` as the newest entry of its name: written after every `older` one, even when the clock is behind."""
    if kb.state not in STATES:
        raise ValueError(f"unknown catalog state {kb.state!r}")
    return replace(kb, settings=dict(kb.settings),
                   committed_ns=max([time.time_ns(), *(e.committed_ns + 1 for e in older)]))


class MilvusCatalog:
    """The KnowledgeBaseCatalog (rag_core.ports) in a Milvus collection, through an open client (see the module
    docstring), and a DatabaseCatalog: the collections of that database are what it reads them from. `on_close`
    releases the connection it was given, if it owns one."""

    def __init__(self, client: Any, *, on_close: Callable[[], None] | None = None) -> None:
        self.client = client
        self._on_close = on_close
        self.created = False  # this open made the catalog (a database from before knowledge bases)
        self._ensure()

    def _ensure(self) -> None:
        client = self.client
        if not client.has_collection(CATALOG):
            try:
                self._create()
                self.created = True
            except Exception:  # noqa: BLE001 - another process may have created it at the same moment
                if not client.has_collection(CATALOG):
                    raise
        client.load_collection(CATALOG)

    def _create(self) -> None:
        from pymilvus import DataType

        client = self.client
        schema = client.create_schema(auto_id=False, enable_dynamic_field=False,
                                      description="rag-workbench catalog of knowledge bases")
        schema.add_field("key", DataType.VARCHAR, is_primary=True, max_length=64)
        schema.add_field("name", DataType.VARCHAR, max_length=256)
        schema.add_field("state", DataType.VARCHAR, max_length=16)
        schema.add_field("settings", DataType.VARCHAR, max_length=8192)  # JSON text: read back exactly
        schema.add_field("created_at", DataType.VARCHAR, max_length=64)
        schema.add_field("note", DataType.VARCHAR, max_length=1024)
        schema.add_field("committed_ns", DataType.INT64)
        schema.add_field("_unused", DataType.FLOAT_VECTOR, dim=2)  # Milvus requires a vector field
        index = client.prepare_index_params()
        index.add_index("_unused", index_type="FLAT", metric_type="L2")
        client.create_collection(CATALOG, schema=schema, index_params=index)

    # ---------------------------------------------------------------- reads
    def _rows(self, expr: str) -> list[tuple[str, KnowledgeBase]]:
        rows = self.client.query(CATALOG, filter=expr, output_fields=FIELDS, limit=QUERY_LIMIT,
                                 consistency_level="Strong")  # a server's default may not show the last write
        entries = []
        for row in rows:
            try:
                settings = json.loads(row["settings"] or "{}")
            except json.JSONDecodeError:
                raise StoreError(f"The catalog entry of knowledge base {row['name']!r} is damaged (its settings are "
                                 "not JSON).") from None
            provenance = settings.pop(PROVENANCE, None)
            entries.append((row["key"], KnowledgeBase(row["name"], settings, row["state"], row["created_at"],
                                                      row["note"], int(row["committed_ns"]),
                                                      provenance if isinstance(provenance, dict) else {})))
        return entries

    def _entries(self) -> dict[str, KnowledgeBase]:
        return newest(self._rows('name != ""'))

    def list_knowledge_bases(self) -> list[KnowledgeBase]:
        return active(self._entries())

    def get(self, name: str) -> KnowledgeBase | None:
        return next(iter(active(newest(self._rows(filters.equals("name", name))))), None)

    def unfinished(self) -> list[KnowledgeBase]:
        return unfinished_of(self._entries())

    # ---------------------------------------------------------------- writes
    def write(self, kb: KnowledgeBase) -> KnowledgeBase:
        old = self._rows(filters.equals("name", kb.name))
        kb = stamped(kb, (e for _, e in old))
        key = hashlib.sha256(f"{kb.name}\x00{kb.state}\x00{uuid.uuid4().hex}".encode()).hexdigest()[:32]
        self.client.insert(CATALOG, [{"key": key, "name": kb.name, "state": kb.state,
                                      "settings": json.dumps(settings_json(kb), ensure_ascii=False, sort_keys=True),
                                      "created_at": kb.created_at, "note": kb.note[:1000],
                                      "committed_ns": kb.committed_ns, "_unused": [0.0, 0.0]}])  # the commit
        if old:
            self.client.delete(CATALOG, filter=filters.one_of("key", [k for k, _ in old]))
        return kb

    def forget(self, name: str) -> None:
        self.client.delete(CATALOG, filter=filters.equals("name", name))

    # ---------------------------------------------------------------- the database (ports.DatabaseCatalog)
    def list_collections(self) -> list[str]:
        return list(self.client.list_collections())

    def has_collection(self, name: str) -> bool:
        return bool(self.client.has_collection(name))

    def collection_meta(self, name: str) -> Mapping[str, Any]:
        return collection_meta(self.client, name) if self.has_collection(name) else {}

    def sample_fingerprint(self, name: str) -> tuple[str, str] | None:
        """The fingerprint and content hash of one active document in knowledge base `name`'s registry."""
        registry = name + REGISTRY_SUFFIX
        try:
            self.client.load_collection(registry)
            rows = self.client.query(registry, filter='state == "active"', limit=1,
                                     output_fields=["fingerprint", "content_hash"])
        except Exception:  # noqa: BLE001 - an unreadable registry: the store's open reports it
            return None
        return (str(rows[0]["fingerprint"]), str(rows[0]["content_hash"])) if rows else None

    def close(self) -> None:
        if self._on_close is not None:
            self._on_close()
            self._on_close = None


def collection_meta(client: Any, name: str) -> Mapping[str, Any]:
    """What the workbench recorded in a chunk collection's description (app, layout, embedder, dim), or {}."""
    try:
        return json.loads(client.describe_collection(name).get("description") or "{}")
    except (json.JSONDecodeError, AttributeError):
        return {}

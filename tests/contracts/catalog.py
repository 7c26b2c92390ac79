"""The KnowledgeBaseCatalog contract (rag_core.ports.KnowledgeBaseCatalog), checked on every adapter. A test
module subclasses `CatalogContract` and provides a `catalog` fixture: an open, empty catalog.

A catalog kept in the knowledge bases' database (ports.DatabaseCatalog) also subclasses `DatabaseCatalogContract`
and provides `database`: that catalog, and `make_store(name)`, a store on collection `name` of the same database
(a ports.KnowledgeStore, not opened)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace

import pytest

from rag_core.names import CATALOG
from rag_core.ports import DatabaseCatalog, KnowledgeBaseCatalog, KnowledgeStore
from rag_core.records import KnowledgeBase
from tests.contracts.store import DIM, EMBEDDER, new_version, text_of

SETTINGS = {"chunk.max-size": 800, "chunk.overlap": 100, "embedding.provider": "local", "rag.dense-weight": 0.5}


def entry(name: str, state: str = "active", **settings: object) -> KnowledgeBase:
    return KnowledgeBase(name, {**SETTINGS, **settings}, state, created_at="2026-01-01T00:00:00+00:00",
                         note=f"test {name}")


class CatalogContract:
    @pytest.fixture
    def catalog(self) -> KnowledgeBaseCatalog:
        raise NotImplementedError("a test module provides the adapter under test")

    def test_is_a_catalog(self, catalog: KnowledgeBaseCatalog) -> None:
        assert isinstance(catalog, KnowledgeBaseCatalog)

    def test_empty(self, catalog: KnowledgeBaseCatalog) -> None:
        assert catalog.list_knowledge_bases() == [] and catalog.get("biz") is None and catalog.unfinished() == []

    def test_write_and_read_back_exactly(self, catalog: KnowledgeBaseCatalog) -> None:
        written = catalog.write(entry("b_kb", **{"embedding.model": "模型 \"x\"", "rag.bm25-weight": 0.25}))
        catalog.write(entry("a_kb"))
        got = catalog.get("b_kb")
        assert got == written and got.committed_ns > 0
        assert dict(got.settings) == {**SETTINGS, "embedding.model": "模型 \"x\"", "rag.bm25-weight": 0.25}
        assert isinstance(got.settings["chunk.max-size"], int) and isinstance(got.settings["rag.dense-weight"], float)
        assert [kb.name for kb in catalog.list_knowledge_bases()] == ["a_kb", "b_kb"]

    def test_provenance_is_kept_apart_from_the_settings(self, catalog: KnowledgeBaseCatalog) -> None:
        """Where settings came from (rag_core.kb.settings.origin_of) reads back as written, never as a setting."""
        provenance = {"origins": {"rag.retrieve-k": {"kind": "tuned", "value": 30, "set": "hand20", "gain": 0.12}},
                      "tuning": {"set": "hand20", "previous": {"rag.retrieve-k": 20}}}
        written = catalog.write(replace(entry("kb1", **{"rag.retrieve-k": 30}), provenance=provenance))
        got = catalog.get("kb1")
        assert got == written and dict(got.provenance) == provenance
        assert dict(got.settings) == {**SETTINGS, "rag.retrieve-k": 30}
        assert catalog.write(entry("kb1")).provenance == {} and catalog.get("kb1").provenance == {}

    def test_a_newer_entry_replaces_the_older_one(self, catalog: KnowledgeBaseCatalog) -> None:
        first = catalog.write(entry("kb1"))
        second = catalog.write(entry("kb1", **{"chunk.max-size": 400}))
        assert second.committed_ns > first.committed_ns
        assert catalog.get("kb1").settings["chunk.max-size"] == 400
        assert [kb.name for kb in catalog.list_knowledge_bases()] == ["kb1"]

    def test_unfinished_entries_are_not_listed(self, catalog: KnowledgeBaseCatalog) -> None:
        catalog.write(entry("copying", "creating"))
        catalog.write(entry("going"))
        catalog.write(entry("going", "deleted"))
        catalog.write(entry("staying"))
        assert [kb.name for kb in catalog.list_knowledge_bases()] == ["staying"]
        assert catalog.get("copying") is None and catalog.get("going") is None
        assert [(kb.name, kb.state) for kb in catalog.unfinished()] == [("copying", "creating"), ("going", "deleted")]
        catalog.write(entry("copying"))  # the commit of a copy
        assert catalog.get("copying") is not None and [kb.name for kb in catalog.unfinished()] == ["going"]

    def test_forget_removes_exactly_one_name(self, catalog: KnowledgeBaseCatalog) -> None:
        catalog.write(entry("kb_a"))
        catalog.write(entry("kb_ab"))
        catalog.write(entry("kb_a", "deleted"))
        catalog.forget("kb_a")
        assert catalog.unfinished() == [] and [kb.name for kb in catalog.list_knowledge_bases()] == ["kb_ab"]

    def test_readers_never_see_a_name_without_an_entry(self, catalog: KnowledgeBaseCatalog) -> None:
        catalog.write(entry("busy"))
        stop, missing = threading.Event(), []

        def read() -> None:
            while not stop.is_set():
                if catalog.get("busy") is None:
                    missing.append(1)

        reader = threading.Thread(target=read)
        reader.start()
        try:
            for size in range(100, 120):
                catalog.write(entry("busy", **{"chunk.max-size": size}))
        finally:
            stop.set()
            reader.join()
        assert not missing and catalog.get("busy").settings["chunk.max-size"] == 119


class DatabaseCatalogContract:
    @pytest.fixture
    def database(self) -> DatabaseCatalog:
        raise NotImplementedError("a test module provides the adapter under test")

    @pytest.fixture
    def make_store(self) -> Callable[[str], KnowledgeStore]:
        raise NotImplementedError

    def test_is_a_database_catalog(self, database: DatabaseCatalog) -> None:
        assert isinstance(database, DatabaseCatalog) and isinstance(database.created, bool)
        assert database.has_collection(CATALOG) and CATALOG in database.list_collections()

    def test_it_sees_a_knowledge_base_s_collections_and_what_they_record(
            self, database: DatabaseCatalog, make_store: Callable[[str], KnowledgeStore]) -> None:
        assert not database.has_collection("seen") and database.collection_meta("seen") == {}
        store = make_store("seen")
        store.open(EMBEDDER, DIM)
        assert database.has_collection("seen") and database.has_collection("seen_docs")
        assert {"seen", "seen_docs"} <= set(database.list_collections())
        assert not database.has_collection("SEEN")  # names are compared exactly
        meta = database.collection_meta("seen")
        assert (meta["app"], meta["embedder"], meta["dim"]) == ("rag-workbench", EMBEDDER, DIM)
        assert database.collection_meta("seen_docs").get("embedder") in (None, "")
        assert database.sample_fingerprint("seen") is None  # no documents yet
        item = new_version("fp.md", text_of("fingerprint"), "fp-sample")
        store.replace_documents([item])
        assert database.sample_fingerprint("seen") == ("fp-sample", item.doc.content_hash)
        assert database.sample_fingerprint("absent") is None

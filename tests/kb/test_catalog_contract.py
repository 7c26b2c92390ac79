"""The catalog contract on every adapter: Milvus Lite, a Milvus server URI (Lite's gRPC server on a loopback
port), and the in-memory fake; and the DatabaseCatalog contract on those kept in the knowledge bases' database
(MilvusCatalog on Lite and a server, and the in-memory catalog kept with in-memory stores)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_core.kb.catalog import MilvusCatalog
from rag_core.kb.memory import InMemoryCatalog, InMemoryDatabaseCatalog
from rag_core.kb.names import CATALOG
from rag_core.store import MilvusStore
from tests.contracts.catalog import CatalogContract, DatabaseCatalogContract, entry
from tests.store.conftest import milvus_server  # noqa: F401 - the module-scoped server fixture


def _emptied(catalog: MilvusCatalog) -> MilvusCatalog:
    for kb in [*catalog.list_knowledge_bases(), *catalog.unfinished()]:
        catalog.forget(kb.name)
    return catalog


@pytest.fixture(scope="module")
def lite_db(tmp_path_factory, milvus) -> Path:
    return Path(tmp_path_factory.mktemp("catalog")) / "milvus.db"


@pytest.fixture(scope="module")
def lite_catalog(lite_db: Path) -> MilvusCatalog:
    connection = MilvusStore(str(lite_db), "biz")
    catalog = MilvusCatalog(connection.client, on_close=connection.close)
    assert catalog.created and connection.client.has_collection(CATALOG)
    yield catalog
    catalog.close()


@pytest.fixture(scope="module")
def server_catalog(milvus_server: str) -> MilvusCatalog:  # noqa: F811
    connection = MilvusStore(milvus_server, "biz", token="root:Milvus", timeout=30)
    catalog = MilvusCatalog(connection.client, on_close=connection.close)
    yield catalog
    catalog.close()


@pytest.fixture
def closing():
    """Stores a test made, closed after it."""
    made: list[MilvusStore] = []
    yield made
    for store in made:
        store.drop()
        store.close()


class TestLiteCatalog(CatalogContract, DatabaseCatalogContract):
    @pytest.fixture
    def catalog(self, lite_catalog: MilvusCatalog) -> MilvusCatalog:
        return _emptied(lite_catalog)

    @pytest.fixture
    def database(self, lite_catalog: MilvusCatalog) -> MilvusCatalog:
        return lite_catalog

    @pytest.fixture
    def make_store(self, lite_db: Path, closing, tmp_path: Path):
        def make(name: str) -> MilvusStore:
            store = MilvusStore(str(lite_db), name, originals=tmp_path / name)  # joins this process's Lite server
            closing.append(store)
            return store
        return make

    def test_a_second_open_finds_it(self, lite_catalog: MilvusCatalog) -> None:
        _emptied(lite_catalog).write(entry("kept"))
        again = MilvusCatalog(lite_catalog.client)
        assert not again.created and again.get("kept") is not None


class TestServerCatalog(CatalogContract, DatabaseCatalogContract):
    @pytest.fixture
    def catalog(self, server_catalog: MilvusCatalog) -> MilvusCatalog:
        return _emptied(server_catalog)

    @pytest.fixture
    def database(self, server_catalog: MilvusCatalog) -> MilvusCatalog:
        return server_catalog

    @pytest.fixture
    def make_store(self, milvus_server: str, closing, tmp_path: Path):  # noqa: F811
        def make(name: str) -> MilvusStore:
            store = MilvusStore(milvus_server, name, token="root:Milvus", timeout=30, originals=tmp_path / name)
            closing.append(store)
            return store
        return make


class TestInMemoryCatalog(CatalogContract):
    @pytest.fixture
    def catalog(self) -> InMemoryCatalog:
        return InMemoryCatalog()


class TestInMemoryDatabaseCatalog(CatalogContract, DatabaseCatalogContract):
    @pytest.fixture
    def catalog(self) -> InMemoryDatabaseCatalog:
        return InMemoryDatabaseCatalog()

    @pytest.fixture
    def database(self, catalog: InMemoryDatabaseCatalog) -> InMemoryDatabaseCatalog:
        return catalog

    @pytest.fixture
    def make_store(self, database: InMemoryDatabaseCatalog):
        return database.store

    def test_a_catalog_without_a_database_is_not_one(self) -> None:
        from rag_core.ports import DatabaseCatalog

        assert not isinstance(InMemoryCatalog(), DatabaseCatalog)

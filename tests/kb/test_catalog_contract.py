"""The catalog contract on every adapter: Milvus Lite, a Milvus server URI (Lite's gRPC server on a loopback
port), and the in-memory fake."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_core.kb.catalog import MilvusCatalog
from rag_core.kb.memory import InMemoryCatalog
from rag_core.kb.names import CATALOG
from rag_core.store import MilvusStore
from tests.contracts.catalog import CatalogContract, entry
from tests.store.conftest import milvus_server  # noqa: F401 - the module-scoped server fixture


def _emptied(catalog: MilvusCatalog) -> MilvusCatalog:
    for kb in [*catalog.list_knowledge_bases(), *catalog.unfinished()]:
        catalog.forget(kb.name)
    return catalog


@pytest.fixture(scope="module")
def lite_catalog(tmp_path_factory, milvus) -> MilvusCatalog:
    connection = MilvusStore(str(Path(tmp_path_factory.mktemp("catalog")) / "milvus.db"), "biz")
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


class TestLiteCatalog(CatalogContract):
    @pytest.fixture
    def catalog(self, lite_catalog: MilvusCatalog) -> MilvusCatalog:
        return _emptied(lite_catalog)

    def test_a_second_open_finds_it(self, lite_catalog: MilvusCatalog) -> None:
        _emptied(lite_catalog).write(entry("kept"))
        again = MilvusCatalog(lite_catalog.client)
        assert not again.created and again.get("kept") is not None


class TestServerCatalog(CatalogContract):
    @pytest.fixture
    def catalog(self, server_catalog: MilvusCatalog) -> MilvusCatalog:
        return _emptied(server_catalog)


class TestInMemoryCatalog(CatalogContract):
    @pytest.fixture
    def catalog(self) -> InMemoryCatalog:
        return InMemoryCatalog()

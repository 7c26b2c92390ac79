"""The ChunkStore contract and the contracts of its capabilities (tests/contracts/store_capabilities.py) on every
adapter: MilvusStore on Milvus Lite, MilvusStore through a server URI (Milvus Lite's gRPC server on a loopback port),
MilvusStore keeping its chunk edits and labels in the shared-state database (SQLite, PostgreSQL: store.kept), and the
in-memory store. Each has every capability (ports.KnowledgeStore)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rag_core.db.engine import engine
from rag_core.db.migrate import upgrade
from rag_core.store import MilvusStore
from rag_core.store.memory import InMemoryChunkStore
from tests.contracts.store import DIM, EMBEDDER, ChunkStoreContract, InterruptedWrite
from tests.contracts.store_capabilities import (
    BM25TermScorerContract,
    EditableStoreContract,
    LabelledStoreContract,
    SharedStoreContract,
    UpgradableStoreContract,
)
from tests.store.clients import FailingClient


@pytest.fixture(scope="module")
def lite_store(tmp_path_factory, milvus) -> MilvusStore:
    folder = Path(tmp_path_factory.mktemp("lite"))
    store = MilvusStore(str(folder / "milvus.db"), "contract", originals=folder / "originals")
    store.open(EMBEDDER, DIM)
    yield store
    store.close()


@pytest.fixture(scope="module")
def server_store(milvus_server: str, tmp_path_factory) -> MilvusStore:
    store = MilvusStore(milvus_server, "contract", token="root:Milvus", timeout=30,
                        originals=Path(tmp_path_factory.mktemp("server-originals")))
    store.open(EMBEDDER, DIM)
    yield store
    store.close()


def kept_in_database(folder: Path, url: str) -> Iterator[MilvusStore]:
    database = engine(url)
    upgrade(database)
    store = MilvusStore(str(folder / "milvus.db"), "contract", originals=folder / "originals", database=database)
    store.open(EMBEDDER, DIM)
    yield store
    store.close()
    database.dispose()


@pytest.fixture(scope="module")
def sqlite_kept_store(tmp_path_factory, milvus) -> Iterator[MilvusStore]:
    folder = Path(tmp_path_factory.mktemp("kept-sqlite"))
    yield from kept_in_database(folder, f"sqlite:///{folder / 'team.db'}")


@pytest.fixture(scope="module")
def postgres_kept_store(tmp_path_factory, milvus, postgres_server) -> Iterator[MilvusStore]:
    url = postgres_server.fresh_database()
    yield from kept_in_database(Path(tmp_path_factory.mktemp("kept-postgres")), url)
    postgres_server.drop_database(url)


@pytest.fixture(scope="module")
def memory_store() -> InMemoryChunkStore:
    store = InMemoryChunkStore()
    store.open(EMBEDDER, DIM)
    return store


class EveryCapability(EditableStoreContract, LabelledStoreContract, SharedStoreContract, BM25TermScorerContract,
                      UpgradableStoreContract):
    """ports.KnowledgeStore: every capability's contract (and BM25TermScorer, which both stores have)."""


class MilvusContract(ChunkStoreContract, EveryCapability):
    def break_commit(self, store: MilvusStore, monkeypatch: pytest.MonkeyPatch) -> None:
        def fail_on_commit(insert, collection, rows, **kwargs):
            if collection == store.registry.name and any(row["state"] == "active" for row in rows):
                raise InterruptedWrite("killed before the commit")
            return insert(collection, rows, **kwargs)

        monkeypatch.setattr(store, "client", FailingClient(store.client, "insert", fail_on_commit))


class TestMilvusLite(MilvusContract):
    @pytest.fixture
    def store(self, lite_store: MilvusStore) -> MilvusStore:
        return lite_store


class TestMilvusServer(MilvusContract):
    @pytest.fixture
    def store(self, server_store: MilvusStore) -> MilvusStore:
        return server_store


class TestMilvusLiteKeptInSqlite(MilvusContract):
    @pytest.fixture
    def store(self, sqlite_kept_store: MilvusStore) -> MilvusStore:
        return sqlite_kept_store


class TestMilvusLiteKeptInPostgres(MilvusContract):
    @pytest.fixture
    def store(self, postgres_kept_store: MilvusStore) -> MilvusStore:
        return postgres_kept_store


class TestInMemory(ChunkStoreContract, EveryCapability):
    @pytest.fixture
    def store(self, memory_store: InMemoryChunkStore) -> InMemoryChunkStore:
        return memory_store

    def break_commit(self, store: InMemoryChunkStore, monkeypatch: pytest.MonkeyPatch) -> None:
        def interrupted(self, versions):
            raise InterruptedWrite("killed before the commit")

        monkeypatch.setattr(InMemoryChunkStore, "_commit", interrupted)

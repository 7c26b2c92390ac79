"""The KnowledgeSearchPort contract on every adapter: StoreSearchPort over Milvus Lite and over the
in-memory ChunkStore (both with the real local embedder), and the in-memory search port (the same port
over the in-memory ChunkStore with the trigram embedder, built by its own constructors)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_core.ingest import Ingestor
from rag_core.retrieval.memory import InMemorySearchPort
from rag_core.retrieval.ports import StoreSearchPort
from rag_core.store.memory import InMemoryChunkStore
from tests.contracts.search_port import CHUNK_OVERLAP, CHUNK_SIZE, CORPUS, SearchPortContract
from tests.helpers import make_workbench


@pytest.fixture(scope="module")
def contract_wb(tmp_path_factory, local_embedder, milvus):
    wb = make_workbench(Path(tmp_path_factory.mktemp("port-contract")), embedder=local_embedder,
                        **{"chunk.max-size": CHUNK_SIZE, "chunk.overlap": CHUNK_OVERLAP})
    reports = wb.ingestor.ingest_uploads([(doc_id, text.encode()) for doc_id, text in CORPUS.items()])
    assert [r.status for r in reports] == ["added"] * len(CORPUS), reports
    yield wb
    wb.close()


@pytest.fixture(scope="module")
def empty_wb(tmp_path_factory, local_embedder, milvus):
    wb = make_workbench(Path(tmp_path_factory.mktemp("port-contract-empty")), embedder=local_embedder)
    yield wb
    wb.close()


class TestStoreSearchPortOnMilvusLite(SearchPortContract):
    @pytest.fixture
    def search_port(self, contract_wb):
        return StoreSearchPort(contract_wb.store, contract_wb.embedder)

    @pytest.fixture
    def empty_search_port(self, empty_wb):
        return StoreSearchPort(empty_wb.store, empty_wb.embedder)


@pytest.fixture(scope="module")
def memory_store(local_embedder):
    store = InMemoryChunkStore()
    store.open(local_embedder.name, local_embedder.dim)
    reports = Ingestor(store, local_embedder, max_size=CHUNK_SIZE, overlap=CHUNK_OVERLAP).ingest_uploads(
        [(doc_id, text.encode()) for doc_id, text in CORPUS.items()])
    assert [r.status for r in reports] == ["added"] * len(CORPUS), reports
    return store


class TestStoreSearchPortOnInMemoryChunkStore(SearchPortContract):
    @pytest.fixture
    def search_port(self, memory_store, local_embedder):
        return StoreSearchPort(memory_store, local_embedder)

    @pytest.fixture
    def empty_search_port(self, local_embedder):
        store = InMemoryChunkStore()
        store.open(local_embedder.name, local_embedder.dim)
        return StoreSearchPort(store, local_embedder)


@pytest.fixture(scope="module")
def memory_port():
    return InMemorySearchPort.from_texts(CORPUS, CHUNK_SIZE, CHUNK_OVERLAP)


class TestInMemorySearchPort(SearchPortContract):
    @pytest.fixture
    def search_port(self, memory_port):
        return memory_port

    @pytest.fixture
    def empty_search_port(self):
        return InMemorySearchPort({})

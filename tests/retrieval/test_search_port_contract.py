"""The KnowledgeSearchPort and DocumentChunksPort contracts on every adapter: StoreSearchPort over Milvus Lite and
over the in-memory ChunkStore (both with the real local embedder), the in-memory search port (the same port over the
in-memory ChunkStore with the trigram embedder, built by its own constructors), and MultiKnowledgeBasePort over two
knowledge bases (doc_ids labelled `kb:doc`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_core.identity import doc_id_of
from rag_core.ingest import Ingestor
from rag_core.kb.chunk_edits import set_disabled
from rag_core.retrieval.multi import SEPARATOR, MultiKnowledgeBasePort
from rag_core.retrieval.ports import StoreSearchPort
from rag_core.store.memory import InMemoryChunkStore
from tests.contracts.search_port import CHUNK_OVERLAP, CHUNK_SIZE, CORPUS, DocumentChunksContract, SearchPortContract
from tests.helpers import make_workbench
from tests.retrieval.memory import InMemorySearchPort


def _disable(store, doc: str, index: int, disabled: bool) -> None:
    set_disabled(store, f"{doc}#chunk-{index}", disabled, who="contract")


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


class TestStoreSearchPortOnMilvusLite(SearchPortContract, DocumentChunksContract):
    @pytest.fixture
    def search_port(self, contract_wb):
        return StoreSearchPort(contract_wb.store, contract_wb.embedder)

    @pytest.fixture
    def empty_search_port(self, empty_wb):
        return StoreSearchPort(empty_wb.store, empty_wb.embedder)

    def disable(self, search_port, doc: str, index: int, disabled: bool) -> None:
        _disable(search_port.store, doc, index, disabled)


def memory_store(embedder, texts: dict[str, str]) -> InMemoryChunkStore:
    store = InMemoryChunkStore()
    store.open(embedder.name, embedder.dim)
    if texts:
        reports = Ingestor(store, embedder, max_size=CHUNK_SIZE, overlap=CHUNK_OVERLAP).ingest_uploads(
            [(doc_id, text.encode()) for doc_id, text in texts.items()])
        assert [r.status for r in reports] == ["added"] * len(texts), reports
    return store


@pytest.fixture(scope="module")
def corpus_store(local_embedder):
    return memory_store(local_embedder, CORPUS)


class TestStoreSearchPortOnInMemoryChunkStore(SearchPortContract, DocumentChunksContract):
    @pytest.fixture
    def search_port(self, corpus_store, local_embedder):
        return StoreSearchPort(corpus_store, local_embedder)

    @pytest.fixture
    def empty_search_port(self, local_embedder):
        return StoreSearchPort(memory_store(local_embedder, {}), local_embedder)

    def disable(self, search_port, doc: str, index: int, disabled: bool) -> None:
        _disable(search_port.store, doc, index, disabled)


@pytest.fixture(scope="module")
def memory_port():
    return InMemorySearchPort.from_texts(CORPUS, CHUNK_SIZE, CHUNK_OVERLAP)


class TestInMemorySearchPort(SearchPortContract, DocumentChunksContract):
    @pytest.fixture
    def search_port(self, memory_port):
        return memory_port

    @pytest.fixture
    def empty_search_port(self):
        return InMemorySearchPort({})

    def disable(self, search_port, doc: str, index: int, disabled: bool) -> None:
        _disable(search_port.store, doc, index, disabled)


PARTS = {"ops": {k: v for k, v in CORPUS.items() if k.startswith("ops/")},
         "rest": {k: v for k, v in CORPUS.items() if not k.startswith("ops/")}}


@pytest.fixture(scope="module")
def two_kbs(local_embedder) -> MultiKnowledgeBasePort:
    return MultiKnowledgeBasePort({name: StoreSearchPort(memory_store(local_embedder, texts), local_embedder)
                                   for name, texts in PARTS.items()})


class TestMultiKnowledgeBasePort(SearchPortContract, DocumentChunksContract):
    """The contracts over two knowledge bases: a document's doc_id is `<kb>:<doc_id>` in hits and chunks alike."""

    def label(self, doc: str) -> str:
        return next(f"{kb}{SEPARATOR}{doc}" for kb, texts in PARTS.items() if doc in texts) \
            if doc in CORPUS else f"ops{SEPARATOR}{doc}"

    def doc_of(self, hit):
        kb, _, doc_id = doc_id_of(hit.metadata).partition(SEPARATOR)
        assert kb in PARTS and doc_id in PARTS[kb] and hit.metadata["knowledgeBase"] == kb
        return doc_id

    @pytest.fixture
    def search_port(self, two_kbs):
        return two_kbs

    @pytest.fixture
    def empty_search_port(self, local_embedder):
        return MultiKnowledgeBasePort({name: StoreSearchPort(memory_store(local_embedder, {}), local_embedder)
                                       for name in PARTS})

    def disable(self, search_port, doc: str, index: int, disabled: bool) -> None:
        kb = self.label(doc).partition(SEPARATOR)[0]
        _disable(search_port.ports[kb].store, doc, index, disabled)

    def test_a_document_of_no_knowledge_base_has_no_chunks(self, search_port) -> None:
        assert search_port.document_chunks("lab/zebrafish.md") == []  # not labelled
        assert search_port.document_chunks(f"nope{SEPARATOR}lab/zebrafish.md") == []

"""A small knowledge base searched with a remote embedder and a remote reranker (loopback servers speaking their
protocols, so their requests run in worker threads as in use), a chat model on a loopback OpenAI server, and the
process's tracing pointed at an in-memory exporter or a loopback OTLP receiver."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from rag_core import tracing
from rag_core.agent import Agent, Toolbox, knowledge_base_tool
from rag_core.chunking import chunk_text
from rag_core.clients.openai_chat import ChatModelConfig, OpenAIChatModel
from rag_core.embedding.openai_compat import OpenAICompatEmbedder
from rag_core.records import Document, NewVersion, SearchOptions
from rag_core.rerank.openai_compat import OpenAICompatReranker
from rag_core.retrieval import KnowledgeRetriever, LookupParams, StoreSearchPort
from rag_core.store.memory import InMemoryChunkStore
from tests.servers.chat import OpenAIChatServer
from tests.servers.embeddings import OpenAIEmbeddingServer
from tests.servers.rerank import OpenAIRerankServer

CHAT_KEY = "sk-trace-SECRET-77c1d0e4"
EMBED_KEY = "sk-embed-SECRET-0b9f2a"
DOCS = {
    "runbooks/cpu_high.md": "# CPU high\n\nWhen CPU usage is above 90 percent, find the process with top and "
                            "restart the service if it is stuck.\n\nEscalate to the on-call engineer after 15 "
                            "minutes.",
    "runbooks/disk_full.md": "# Disk full\n\nFree disk space by deleting old logs under /var/log and rotating them.",
    "policies/release.md": "# Releases\n\nReleases happen on Tuesdays; a freeze applies before holidays.",
}


@pytest.fixture(scope="module")
def embed_server() -> Iterator[OpenAIEmbeddingServer]:
    yield from OpenAIEmbeddingServer(api_key=EMBED_KEY).serve()


@pytest.fixture(scope="module")
def rerank_server() -> Iterator[OpenAIRerankServer]:
    yield from OpenAIRerankServer().serve()


@pytest.fixture
def chat_server() -> Iterator[OpenAIChatServer]:
    yield from OpenAIChatServer(api_key=CHAT_KEY).serve()


@pytest.fixture(scope="module")
def retriever(embed_server: OpenAIEmbeddingServer, rerank_server: OpenAIRerankServer) -> KnowledgeRetriever:
    embedder = OpenAICompatEmbedder(embed_server.base_url, "test-embed", EMBED_KEY, timeout=30, max_retries=0)
    store = InMemoryChunkStore("traced")
    store.open(embedder.name, embedder.dim)
    items = []
    for doc_id, text in DOCS.items():
        chunks = chunk_text(text, 60, 10)
        document = Document(doc_id=doc_id, text=text, file_name=doc_id.rsplit("/", 1)[-1], extension="md",
                            size_bytes=len(text.encode()), content_hash=hashlib.sha256(text.encode()).hexdigest())
        items.append(NewVersion(document, chunks,
                                embedder.embed_documents([c.text for c in chunks]), fingerprint=""))
    store.replace_documents(items)
    reranker = OpenAICompatReranker(rerank_server.base_url, "test-rerank", timeout=30, max_retries=0)
    port = StoreSearchPort(store, embedder, SearchOptions(mode="hybrid"))
    return KnowledgeRetriever(port, LookupParams(retrieve_k=10, return_n=3, max_chunks_per_document=1), reranker)


def make_agent(retriever: KnowledgeRetriever, server: OpenAIChatServer | None, **kw: object) -> Agent:
    model = None
    if server is not None:
        model = OpenAIChatModel(ChatModelConfig(provider="openai", base_url=server.base_url, model=server.models[0],
                                                timeout=30, max_retries=0, api_key_env="TEST_CHAT_KEY"), CHAT_KEY)
    return Agent(Toolbox([knowledge_base_tool(retriever)]), model, kbs=("traced",), **kw)  # type: ignore[arg-type]


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Every span ended during the test, at once (a simple processor)."""
    exporter = InMemorySpanExporter()
    tracing.install(tracing.TracingConfig(), exporter, simple=True)
    yield exporter
    tracing.install(tracing.TracingConfig(), pinned=False)


@pytest.fixture
def no_content_spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    tracing.install(tracing.TracingConfig(capture_content=False), exporter, simple=True)
    yield exporter
    tracing.install(tracing.TracingConfig(), pinned=False)

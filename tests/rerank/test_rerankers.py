"""Every reranker passes the `Reranker` contract, and every remote one the failure contract, through
loopback servers speaking DashScope's, the OpenAI-compatible and TEI's protocols (the real `dashscope`
SDK for DashScope)."""

from __future__ import annotations

import pytest

from rag_core.bootstrap import build_reranker
from rag_core.config import load_settings
from rag_core.errors import ConfigError, RerankError
from rag_core.rerank.circuit import GuardedReranker
from rag_core.rerank.dashscope import DashScopeReranker
from rag_core.rerank.openai_compat import OpenAICompatReranker
from rag_core.rerank.tei import TEIReranker
from tests.contracts.remote import GENEROUS, RemoteFailuresContract
from tests.contracts.reranker import DOCS, RerankerContract
from tests.fakes.reranker import FakeReranker
from tests.servers import RecordedRequest, Reply
from tests.servers.rerank import DashScopeRerankServer, OpenAIRerankServer, TEIRerankServer

KEY = "sk-rerank-SECRET-0c9d2e"


class TestFakeReranker(RerankerContract):
    @pytest.fixture
    def reranker(self):
        return FakeReranker()


class TestGuardedReranker(RerankerContract):
    """The circuit breaker bootstrap puts around every reranker is a Reranker itself."""

    @pytest.fixture
    def reranker(self):
        return GuardedReranker(FakeReranker())


class RemoteRerankerTests(RerankerContract, RemoteFailuresContract):
    """Both contracts for an adapter; a subclass provides `server` and `make`."""

    error = RerankError

    @pytest.fixture
    def reranker(self, make):
        return make(timeout=GENEROUS, max_retries=0)

    @pytest.fixture
    def call(self):
        return lambda reranker: reranker.rerank("disk is full", DOCS)


class TestDashScopeReranker(RemoteRerankerTests):
    @pytest.fixture
    def server(self):
        yield from DashScopeRerankServer(api_key=KEY).serve()

    @pytest.fixture
    def make(self, server):
        def make(url=None, **kw):
            return DashScopeReranker(KEY, base_url=f"{url or server.url}/api/v1", **kw)
        return make

    def test_the_request_through_the_real_sdk(self, server, reranker) -> None:
        assert reranker.name == "dashscope:gte-rerank-v2"
        reranker.rerank("disk", DOCS[:2])
        (request,) = server.requests
        assert request.path == "/api/v1/services/rerank/text-rerank/text-rerank"
        assert request.header("authorization") == f"Bearer {KEY}"
        assert request.json["input"] == {"query": "disk", "documents": DOCS[:2]}
        assert request.json["parameters"] == {"return_documents": False, "top_n": 2}

    def test_limits_batching_and_truncation_are_said_in_the_notes(self, server, reranker) -> None:
        long_doc = "disk " * 20_000  # ~33,000 estimated tokens: beyond 4,000 per document
        docs = [f"document {i} about disk space" for i in range(1200)] + [long_doc]
        result = reranker.rerank("disk space", docs)
        assert len(result.scores) == 1201 and result.scores[0] == 1.0
        sizes = [len(d) for d in server.sent_documents()]
        assert sizes == [500, 500, 201] and sum(sizes) == 1201
        assert len(server.sent_documents()[-1][-1]) < len(long_doc)
        assert result.notes == ("1 document truncated to ~4,000 tokens (DashScope's per-document limit)",
                                "sent in 3 requests (DashScope's allows 500 documents and ~30,000 tokens per request)")

    def test_the_token_budget_splits_requests_too(self, server, reranker) -> None:
        docs = ["磁盘" * 1900] * 20  # 3,800 estimated tokens each: eight fit in 30,000
        result = reranker.rerank("磁盘空间", docs)
        assert [len(d) for d in server.sent_documents()] == [7, 7, 6] and len(result.scores) == 20

    def test_a_rejected_key_names_the_variable_not_the_key(self, server) -> None:
        def echo(request: RecordedRequest) -> Reply:
            return DashScopeRerankServer.error(401, "InvalidApiKey", f"bad key {request.header('authorization')}")
        server.always(echo)
        with pytest.raises(RerankError) as info:
            DashScopeReranker(KEY, base_url=server.base_url, api_key_env="MY_KEY").rerank("q", ["d"])
        assert KEY not in str(info.value) and "rejected the API key (HTTP 401). Check MY_KEY" in str(info.value)
        assert info.value.kind == "auth"

    def test_an_unknown_model_is_refused_with_the_servers_reason(self, server) -> None:
        with pytest.raises(
            RerankError, match=r"refused the request \(HTTP 400: Model not exist.\). Check rerank.model."
        ):
            DashScopeReranker(KEY, "nope", base_url=server.base_url).rerank("q", ["d"])


class TestOpenAICompatReranker(RemoteRerankerTests):
    @pytest.fixture
    def server(self):
        yield from OpenAIRerankServer(api_key=KEY).serve()

    @pytest.fixture
    def make(self, server):
        def make(url=None, **kw):
            return OpenAICompatReranker(f"{url or server.url}/v1", "test-rerank", KEY, api_key_env="JINA_API_KEY",
                                        **kw)
        return make

    def test_the_request(self, server, reranker) -> None:
        assert reranker.name == "openai:test-rerank"
        reranker.rerank("disk", DOCS[:3])
        (request,) = server.requests
        assert (request.path, request.header("authorization")) == ("/v1/rerank", f"Bearer {KEY}")
        assert request.json == {"model": "test-rerank", "query": "disk", "documents": DOCS[:3], "top_n": 3}

    def test_answers_that_do_not_fit(self, server, reranker) -> None:
        server.script(Reply.json(200, {"results": [{"index": 0, "relevance_score": 0.5}]}))
        with pytest.raises(RerankError, match=r"answered with scores for 1 of 2 documents. Check rerank.base-url"):
            reranker.rerank("q", ["a", "b"])
        server.script(Reply.json(200, {"results": [{"index": 0, "relevance_score": "high"},
                                                   {"index": 1, "relevance_score": 0.1}]}))
        with pytest.raises(RerankError, match=r"a score that is not a finite number \('high'\)"):
            reranker.rerank("q", ["a", "b"])
        server.script(Reply.json(200, {"data": []}))
        with pytest.raises(RerankError, match="answered without a list of results"):
            reranker.rerank("q", ["a"])

    def test_a_wrong_base_url(self, server) -> None:
        with pytest.raises(RerankError, match=r"has no rerank endpoint \(HTTP 404\). Check rerank.base-url "
                                              r"\(it usually ends in /v1; the client adds /rerank\)."):
            OpenAICompatReranker(server.url, "test-rerank", KEY).rerank("q", ["d"])


class TestTEIReranker(RemoteRerankerTests):
    @pytest.fixture
    def server(self):
        yield from TEIRerankServer().serve()

    @pytest.fixture
    def make(self, server):
        def make(url=None, **kw):
            return TEIReranker(url or server.url, "bge-reranker-base", **kw)
        return make

    def test_batches_of_32_as_tei_accepts(self, server, reranker) -> None:
        assert reranker.name == "tei:bge-reranker-base"
        result = reranker.rerank("disk", [f"disk {i}" for i in range(70)])
        assert [len(t) for t in server.sent_texts()] == [32, 32, 6] and len(result.scores) == 70
        assert server.requests[0].json["truncate"] is True
        assert result.notes == ("sent in 3 requests (TEI's default --max-client-batch-size allows 32 documents "
                                "per request)",)

    def test_a_smaller_server_batch_limit_is_explained(self) -> None:
        with TEIRerankServer(max_batch=8) as server, pytest.raises(RerankError) as info:
            url = server.url
            TEIReranker(url).rerank("q", ["d"] * 10)
        assert str(info.value) == (f"The TEI reranker at {url} refused the request (HTTP 422: batch size 10 "
                                   "> maximum allowed batch size 8). If it is about the batch size, start TEI with "
                                   "--max-client-batch-size 32 or more.")


# ------------------------------------------------------------------------------------------- bootstrap
def settings(**overrides):
    return load_settings(env={}, config_file=None, overrides=overrides)


def test_build_reranker_from_settings() -> None:
    assert build_reranker(settings(), env={}) is None
    ds = build_reranker(
        settings(**{"rerank.provider": "dashscope", "rerank.timeout": 3}), env={"DASHSCOPE_API_KEY": KEY}
    )
    assert ds.name == "dashscope:gte-rerank-v2" and ds.inner.policy.timeout == 3 and ds.inner.policy.max_retries == 1
    assert (ds.threshold, ds.cooldown) == (3, 30.0)  # behind its circuit breaker (rerank.circuit)
    oa = build_reranker(settings(**{"rerank.provider": "openai", "rerank.base-url": "http://127.0.0.1:9/v1",
                                    "rerank.model": "bge", "rerank.api-key-env": "JINA_API_KEY"}),
                        env={"JINA_API_KEY": KEY})
    assert oa.name == "openai:bge" and KEY not in repr(oa)
    tei = build_reranker(settings(**{"rerank.provider": "tei", "rerank.base-url": "http://127.0.0.1:9"}), env={})
    assert tei.name == "tei:http://127.0.0.1:9"


@pytest.mark.parametrize("overrides, message", [
    ({"rerank.provider": "dashscope"}, r"needs an API key in \$DASHSCOPE_API_KEY"),
    ({"rerank.provider": "openai", "rerank.base-url": "http://x/v1"}, "needs rerank.base-url and rerank.model"),
    ({"rerank.provider": "tei"}, "needs rerank.base-url"),
])
def test_build_reranker_configuration_mistakes(overrides, message) -> None:
    with pytest.raises(ConfigError, match=message):
        build_reranker(settings(**overrides), env={})

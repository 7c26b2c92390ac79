"""DashScopeEmbedder with the real `dashscope` SDK talking to a local server that speaks DashScope's
native text-embedding protocol."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from rag_core.embedding.dashscope import DashScopeEmbedder
from rag_core.errors import EmbeddingError
from rag_core.ports import Embedder
from tests.contracts.remote import GENEROUS, HANG, ONCE, arrived, frozen_clock
from tests.servers import RecordedRequest, Reply
from tests.servers.embeddings import DashScopeEmbeddingServer, fake_vector

KEY = "sk-ds-SECRET-5f0c2a9e7b14"
TEXTS = ["向量检索把文本变成向量。", "BM25 is a lexical ranking function.", "第三段：混合检索。"]


@pytest.fixture
def server():
    yield from DashScopeEmbeddingServer(api_key=KEY).serve()


@pytest.fixture
def sleeps() -> list[float]:
    return []


def make(server: DashScopeEmbeddingServer, sleeps: list[float], **kw) -> DashScopeEmbedder:
    kw.setdefault("api_key", KEY)
    kw.setdefault("dimension", 64)
    kw.setdefault("timeout", GENEROUS)
    return DashScopeEmbedder(base_url=server.base_url, sleep=sleeps.append, **kw)


def closed_port_url() -> str:
    with DashScopeEmbeddingServer() as gone:
        url = gone.base_url
    return url


def test_documents_and_query_through_the_real_sdk(server, sleeps) -> None:
    emb = make(server, sleeps)
    assert isinstance(emb, Embedder)
    assert (emb.name, emb.dim) == ("dashscope:text-embedding-v4", 64)
    assert DashScopeEmbedder(KEY).name == "dashscope:text-embedding-v4"
    assert DashScopeEmbedder(KEY).dim == 1024

    docs = emb.embed_documents(TEXTS)
    assert docs.shape == (3, 64) and docs.dtype == np.float32
    for row, text in zip(docs, TEXTS):
        np.testing.assert_array_equal(row, fake_vector(text, 64))

    query = emb.embed_query("什么是向量检索")
    assert query.shape == (64,) and query.dtype == np.float32
    np.testing.assert_array_equal(query, fake_vector("什么是向量检索", 64))

    first, second = server.requests
    assert first.method == "POST"
    assert first.path == "/api/v1/services/embeddings/text-embedding/text-embedding"
    assert first.header("authorization") == f"Bearer {KEY}"
    assert first.json == {"model": "text-embedding-v4", "input": {"texts": TEXTS},
                          "parameters": {"text_type": "document", "dimension": 64}}
    assert second.json["parameters"]["text_type"] == "query"
    assert sleeps == []


def test_rows_are_put_back_in_input_order_by_text_index(sleeps) -> None:
    with DashScopeEmbeddingServer(api_key=KEY, reverse_order=True) as server:
        docs = make(server, sleeps).embed_documents(TEXTS)
    for row, text in zip(docs, TEXTS):
        np.testing.assert_array_equal(row, fake_vector(text, 64))


def test_batches_stay_within_the_per_call_limit(server, sleeps) -> None:
    texts = [f"chunk {i}" for i in range(25)]
    emb = make(server, sleeps, batch_size=32)  # asks for more than the API takes
    assert emb.batch_size == 10
    docs = emb.embed_documents(texts)
    assert [len(b) for b in server.sent_texts()] == [10, 10, 5]
    assert sum(server.sent_texts(), []) == texts
    np.testing.assert_array_equal(docs[17], fake_vector("chunk 17", 64))

    server.reset()
    make(server, sleeps, batch_size=4).embed_documents(texts[:9])
    assert [len(b) for b in server.sent_texts()] == [4, 4, 1]
    assert make(server, sleeps).embed_documents([]).shape == (0, 64)


def test_throttling_then_success_backs_off_and_honours_retry_after(server, sleeps) -> None:
    server.script(DashScopeEmbeddingServer.throttled(retry_after="3"), DashScopeEmbeddingServer.internal_error())
    docs = make(server, sleeps).embed_documents(TEXTS[:2])
    assert docs.shape == (2, 64)
    assert len(server.requests) == 3
    assert sleeps[0] == 3.0          # the server's Retry-After
    assert 0.75 <= sleeps[1] <= 1.0  # second backoff step (0.5 s, 1 s, ...) with jitter


def test_a_service_that_keeps_failing_gives_a_clear_error(server, sleeps) -> None:
    server.always(DashScopeEmbeddingServer.internal_error())
    with pytest.raises(EmbeddingError) as info:
        make(server, sleeps, max_retries=2).embed_documents(TEXTS)
    message = str(info.value)
    assert "kept failing" in message and "HTTP 500" in message and "3 attempts" in message
    assert len(server.requests) == 3 and len(sleeps) == 2


def test_missing_key_says_which_variable_to_set_and_sends_nothing(server, sleeps) -> None:
    for key in ("", None):
        emb = make(server, sleeps, api_key=key)
        with pytest.raises(EmbeddingError, match="set DASHSCOPE_API_KEY"):
            emb.embed_query("hello")
    emb = make(server, sleeps, api_key="", api_key_env="MY_DS_KEY")
    with pytest.raises(EmbeddingError, match="set MY_DS_KEY"):
        emb.embed_documents(["hello"])
    assert server.requests == []


def test_rejected_key_is_reported_and_not_retried(server, sleeps) -> None:
    with pytest.raises(EmbeddingError) as info:
        make(server, sleeps, api_key="sk-wrong-key-123456").embed_documents(TEXTS)
    assert "rejected the API key (HTTP 401)." in str(info.value)
    assert "Check DASHSCOPE_API_KEY, that the key belongs to the endpoint's region" in str(info.value)
    assert "sk-wrong-key-123456" not in str(info.value)
    assert len(server.requests) == 1 and sleeps == []

    server.script(DashScopeEmbeddingServer.error(403, "AccessDenied", "Access denied."))
    with pytest.raises(EmbeddingError, match=r"rejected the API key \(HTTP 403\)"):
        make(server, sleeps).embed_query("x")


def test_timeouts_are_retried_then_reported(server, sleeps) -> None:
    hung = Reply.json(200, {}, delay=HANG)
    make(server, sleeps).embed_query("warm")  # the SDK's first call in a process imports what it needs
    server.reset()
    server.script(hung)
    assert make(server, sleeps, timeout=ONCE, max_retries=1, clock=frozen_clock).embed_query("x").shape == (64,)
    assert len(server.requests) == 2 and len(sleeps) == 1

    server.reset()
    server.always(hung)
    with pytest.raises(EmbeddingError) as info:
        make(server, sleeps, timeout=0.2, max_retries=1, clock=frozen_clock).embed_query("x")
    assert "did not answer within 0.2 s" in str(info.value) and "embedding.timeout" in str(info.value)
    assert arrived(server, 2)


def test_unreachable_endpoint(sleeps) -> None:
    url = closed_port_url()
    emb = DashScopeEmbedder(KEY, base_url=url, timeout=GENEROUS, sleep=sleeps.append)
    with pytest.raises(EmbeddingError) as info:
        emb.embed_query("x")
    assert str(info.value) == (f"The DashScope embedding service at {url} did not answer (connection refused). "
                               "Check embedding.base-url.")
    assert info.value.kind == "connection" and sleeps == []


def test_bad_requests_and_bad_answers_are_explained(server, sleeps) -> None:
    with pytest.raises(EmbeddingError, match="refused the request.*dimension 100 is invalid"):
        make(server, sleeps, dimension=100).embed_query("x")

    def wrong_size(request: RecordedRequest) -> Reply:
        texts = request.json["input"]["texts"]
        rows = [{"text_index": i, "embedding": [0.1] * 32} for i in range(len(texts))]
        return Reply.json(200, {"output": {"embeddings": rows}, "usage": {"total_tokens": 1}})

    server.script(wrong_size)
    with pytest.raises(EmbeddingError, match="returned 32-dimensional vectors but 64 were expected"):
        make(server, sleeps).embed_documents(TEXTS)

    server.script(Reply.json(200, {"output": {"embeddings": []}}))
    with pytest.raises(EmbeddingError, match="0 vectors for 3 texts"):
        make(server, sleeps).embed_documents(TEXTS)

    with pytest.raises(EmbeddingError, match="HTTP 404"):
        DashScopeEmbedder(KEY, base_url=server.url + "/wrong", sleep=sleeps.append).embed_query("x")


def test_empty_texts_are_refused_before_any_call(server, sleeps) -> None:
    emb = make(server, sleeps)
    with pytest.raises(EmbeddingError, match=r"empty text \(item 2 of 3\)"):
        emb.embed_documents(["a", "  ", "c"])
    with pytest.raises(EmbeddingError, match="empty query"):
        emb.embed_query("")
    assert server.requests == []


def test_the_sdk_global_endpoint_is_left_alone(server, sleeps) -> None:
    import dashscope

    before = dashscope.base_http_api_url
    make(server, sleeps).embed_query("x")
    assert dashscope.base_http_api_url == before


def test_the_key_never_appears_in_messages_or_logs(server, sleeps, caplog, capsys) -> None:
    caplog.set_level(logging.DEBUG)

    def echo_auth(status: int):
        # A misbehaving gateway that quotes the request headers back in its error message.
        def reply(request: RecordedRequest) -> Reply:
            return DashScopeEmbeddingServer.error(status, "Echo", f"bad request, headers={dict(request.headers)}")
        return reply

    emb = make(server, sleeps, max_retries=1)
    assert KEY not in repr(emb) and KEY not in str(vars(emb).get("name"))
    messages = []
    for status in (400, 500, 401):
        server.reset()
        server.always(echo_auth(status))
        with pytest.raises(EmbeddingError) as info:
            emb.embed_documents(TEXTS)
        assert info.value.__cause__ is None and info.value.__suppress_context__
        messages.append(str(info.value))
    assert "headers=" in messages[0]  # the server's message is shown, with the key blanked
    for message in messages:
        assert KEY not in message
    captured = capsys.readouterr()
    assert KEY not in caplog.text and KEY not in captured.out and KEY not in captured.err
    assert "retry 1/1" in caplog.text  # the retry was logged, without the key


def test_an_endpoint_that_is_not_dashscope(server, sleeps) -> None:
    server.script(Reply.text(200, "<html>a login page</html>"))
    with pytest.raises(EmbeddingError) as info:
        make(server, sleeps).embed_query("x")
    assert str(info.value) == (f"The DashScope embedding service at {server.base_url} answered with an HTML page "
                               "instead of the API's JSON: '<html>a login page</html>'. Check embedding.base-url "
                               "(it should end in /api/v1).")
    assert info.value.kind == "malformed" and len(server.requests) == 1  # not retried
    server.script(Reply.json(200, {"data": []}))
    with pytest.raises(EmbeddingError, match="answered with no vectors for 1 text; check that it is DashScope's "
                                             "native API"):
        make(server, sleeps).embed_query("x")


def test_a_server_that_drips_bytes_is_cut_off_at_the_timeout(server, sleeps) -> None:
    rows = [{"text_index": 0, "embedding": [float(x) for x in fake_vector("x", 64)]}]
    server.always(Reply.drip(Reply.json(200, {"output": {"embeddings": rows}, "usage": {"total_tokens": 1}}),
                             every=0.1))
    with pytest.raises(EmbeddingError) as info:  # the whole answer would take seconds
        make(server, sleeps, timeout=0.5, max_retries=0).embed_query("x")
    assert str(info.value) == (f"The DashScope embedding service at {server.base_url} did not answer within 0.5 s "
                               "(1 attempt). Try again, or raise embedding.timeout.")
    assert arrived(server, 1)

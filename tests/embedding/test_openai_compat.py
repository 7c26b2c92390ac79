"""OpenAICompatEmbedder with the real `openai` SDK talking to a local `/v1/embeddings` server."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from rag_core.embedding.openai_compat import OpenAICompatEmbedder
from rag_core.errors import EmbeddingError
from rag_core.ports import Embedder
from tests.contracts.remote import GENEROUS, HANG, ONCE, arrived, frozen_clock
from tests.servers import RecordedRequest, Reply
from tests.servers.embeddings import OpenAIEmbeddingServer, fake_vector

KEY = "sk-oa-SECRET-81d3f0b6c2aa"
MODEL = "test-embed"  # native dimension 16 on the fake server
TEXTS = ["Vector search finds nearby embeddings.", "向量检索", "BM25 ranks by term statistics."]


@pytest.fixture
def server():
    yield from OpenAIEmbeddingServer(api_key=KEY, models={MODEL: 16}).serve()


@pytest.fixture
def sleeps() -> list[float]:
    return []


def make(server: OpenAIEmbeddingServer, sleeps: list[float], **kw) -> OpenAICompatEmbedder:
    kw.setdefault("api_key", KEY)
    kw.setdefault("model", MODEL)
    kw.setdefault("timeout", GENEROUS)
    kw.setdefault("base_url", server.base_url)
    return OpenAICompatEmbedder(sleep=sleeps.append, **kw)


def test_documents_and_query_through_the_real_sdk(server, sleeps) -> None:
    emb = make(server, sleeps)
    assert emb.name == "openai:test-embed"
    assert server.requests == []  # nothing is sent until something is embedded

    docs = emb.embed_documents(TEXTS)
    assert docs.shape == (3, 16) and docs.dtype == np.float32
    for row, text in zip(docs, TEXTS):
        np.testing.assert_array_equal(row, fake_vector(text, 16))
    assert emb.dim == 16 and len(server.requests) == 1  # learnt from the answer, no probe needed
    # On Python 3.11 isinstance() against a runtime Protocol reads every member, `dim` included,
    # so it is checked only once the size is known (otherwise it would send the probe).
    assert isinstance(emb, Embedder) and len(server.requests) == 1

    query = emb.embed_query("how does vector search work")
    assert query.shape == (16,) and query.dtype == np.float32
    np.testing.assert_array_equal(query, fake_vector("how does vector search work", 16))

    first = server.requests[0]
    assert (first.method, first.path) == ("POST", "/v1/embeddings")
    assert first.header("authorization") == f"Bearer {KEY}"
    assert first.json == {"model": MODEL, "input": TEXTS, "encoding_format": "float"}
    assert first.header("x-stainless-retry-count") == "0"  # the SDK's own retries are off
    assert sleeps == []


def test_dim_is_discovered_by_one_probe_when_asked_first(server, sleeps) -> None:
    emb = make(server, sleeps)
    assert emb.dim == 16 and emb.dim == 16
    assert len(server.requests) == 1
    assert emb.embed_documents([]).shape == (0, 16)


def test_a_chosen_dimension_is_requested(server, sleeps) -> None:
    emb = make(server, sleeps, dimension=8)
    assert emb.dim == 8 and server.requests == []
    docs = emb.embed_documents(TEXTS[:2])
    assert docs.shape == (2, 8)
    assert server.requests[0].json["dimensions"] == 8


def test_rows_follow_the_index_field_not_the_answer_order(sleeps) -> None:
    with OpenAIEmbeddingServer(api_key=KEY, reverse_order=True) as server:
        docs = make(server, sleeps).embed_documents(TEXTS)
    for row, text in zip(docs, TEXTS):
        np.testing.assert_array_equal(row, fake_vector(text, 16))


def test_batching(server, sleeps) -> None:
    texts = [f"t{i}" for i in range(10)]
    docs = make(server, sleeps, batch_size=4).embed_documents(texts)
    assert [len(b) for b in server.sent_inputs()] == [4, 4, 2]
    np.testing.assert_array_equal(docs[9], fake_vector("t9", 16))


def test_rate_limit_then_success(server, sleeps) -> None:
    server.script(OpenAIEmbeddingServer.rate_limited(retry_after="2"), OpenAIEmbeddingServer.rate_limited())
    docs = make(server, sleeps).embed_documents(TEXTS)
    assert docs.shape == (3, 16)
    assert len(server.requests) == 3
    assert sleeps[0] == 2.0 and 0.75 <= sleeps[1] <= 1.0


def test_permanent_server_errors(server, sleeps) -> None:
    server.always(OpenAIEmbeddingServer.server_error(503))
    with pytest.raises(EmbeddingError) as info:
        make(server, sleeps, max_retries=3).embed_query("x")
    message = str(info.value)
    assert server.base_url in message and "kept failing" in message and "HTTP 503" in message
    assert "4 attempts" in message
    assert len(server.requests) == 4 and len(sleeps) == 3


def test_rejected_key(server, sleeps) -> None:
    with pytest.raises(EmbeddingError) as info:
        make(server, sleeps, api_key="sk-not-the-right-one").embed_query("x")
    assert str(info.value) == (f"The embedding service at {server.base_url} rejected the API key (HTTP 401). "
                               "Check OPENAI_API_KEY.")
    assert len(server.requests) == 1 and sleeps == []


def test_missing_key(server, sleeps) -> None:
    emb = make(server, sleeps, api_key="", api_key_env="EMBEDDING_API_KEY")
    with pytest.raises(EmbeddingError, match="needs an API key.*set EMBEDDING_API_KEY"):
        emb.embed_query("x")
    assert server.requests[0].header("authorization") is None


def test_keyless_local_servers_work_without_a_key(sleeps) -> None:
    with OpenAIEmbeddingServer(api_key=None) as server:
        vec = make(server, sleeps, api_key=None).embed_query("x")
        assert vec.shape == (16,)
        assert server.requests[0].header("authorization") is None


def test_unknown_model_and_wrong_base_url(server, sleeps) -> None:
    with pytest.raises(EmbeddingError, match=r"has no model 'nope' \(HTTP 404\). Check embedding.model."):
        make(server, sleeps, model="nope").embed_query("x")
    with pytest.raises(EmbeddingError, match=r"has no embeddings endpoint \(HTTP 404\). Check embedding.base-url "
                                             r"\(it usually ends in /v1\)."):
        make(server, sleeps, base_url=server.url).embed_query("x")
    assert sleeps == []


def test_connection_refused_is_reported_at_once(sleeps) -> None:
    with OpenAIEmbeddingServer() as gone:
        url = gone.base_url
    with pytest.raises(
        EmbeddingError, match=f"{url} did not answer \\(connection refused\\). Check embedding.base-url."
    ):
        OpenAICompatEmbedder(url, MODEL, KEY, timeout=GENEROUS, sleep=sleeps.append).embed_query("x")
    assert sleeps == []  # not retried


def test_timeouts_are_retried_then_reported(server, sleeps) -> None:
    hung = Reply.json(200, {}, delay=HANG)
    make(server, sleeps).embed_query("warm")  # the SDK's first call in a process imports what it needs
    server.reset()
    server.script(hung)
    assert make(server, sleeps, timeout=ONCE, max_retries=2, clock=frozen_clock).embed_query("x").shape == (16,)
    assert len(server.requests) == 2

    server.reset()
    server.always(hung)
    with pytest.raises(EmbeddingError, match=r"did not answer within 0.2 s \(2 attempts\)"):
        make(server, sleeps, timeout=0.2, max_retries=1, clock=frozen_clock).embed_query("x")
    assert arrived(server, 2)


def test_bad_answers_and_refused_requests(server, sleeps) -> None:
    def ragged(request: RecordedRequest) -> Reply:
        data = [{"object": "embedding", "index": i, "embedding": [0.5] * (8 + i)}
                for i in range(len(request.json["input"]))]
        return Reply.json(200, {"object": "list", "data": data, "model": MODEL,
                                "usage": {"prompt_tokens": 1, "total_tokens": 1}})

    server.script(ragged)
    with pytest.raises(EmbeddingError, match="returned 8, 9, 10-dimensional vectors"):
        make(server, sleeps).embed_documents(TEXTS)

    emb = make(server, sleeps)
    emb.embed_query("learn the size")  # 16
    server.script(ragged)
    with pytest.raises(EmbeddingError, match="returned 8-dimensional vectors .* but 16 were expected"):
        emb.embed_query("x")

    with pytest.raises(EmbeddingError, match=r"refused the request \(HTTP 400: Invalid 'dimensions': 99.\). "
                                             r"Check embedding.model and embedding.dimension."):
        make(server, sleeps, dimension=99).embed_query("x")

    with pytest.raises(EmbeddingError, match=r"empty text \(item 1 of 2\)"):
        emb.embed_documents(["", "b"])


def test_the_key_never_appears_in_messages_or_logs(server, sleeps, caplog, capsys) -> None:
    caplog.set_level(logging.DEBUG)

    def echo_auth(status: int):
        def reply(request: RecordedRequest) -> Reply:
            return OpenAIEmbeddingServer.error(status, f"rejected; you sent {request.header('authorization')}")
        return reply

    emb = make(server, sleeps, max_retries=1)
    assert KEY not in repr(emb)
    messages = []
    for status in (400, 500, 401, 404):
        server.reset()
        server.always(echo_auth(status))
        with pytest.raises(EmbeddingError) as info:
            emb.embed_documents(TEXTS)
        assert info.value.__cause__ is None
        messages.append(str(info.value))
    assert "you sent Bearer ***" in messages[0]
    for message in messages:
        assert KEY not in message
    captured = capsys.readouterr()
    assert KEY not in caplog.text and KEY not in captured.out and KEY not in captured.err
    assert "retry 1/1" in caplog.text


@pytest.mark.parametrize("reply, what", [
    (Reply(200, b"<html>a login page</html>", {"Content-Type": "text/html"}),
     "answered with an HTML page (text/html) instead of the API's JSON: '<html>a login page</html>'"),
    (Reply(200, b'{"object": "list", "data": [{"index": 0, "embedd', {"Content-Type": "application/json"}),
     "answered with broken JSON (application/json) instead of the API's JSON: "
     "'{\"object\": \"list\", \"data\": [{\"index\": 0, \"embedd'"),
    (Reply(200, b"", {"Content-Type": "application/json"}),
     "answered with an empty body (application/json) instead of the API's JSON"),
    (Reply.json(200, {"output": {}}), "answered without embeddings (no 'data' list in the JSON)"),
    (Reply.json(200, {"data": [{"index": 0, "embedding": "AAAA"}]}),
     "answered with an embedding that is not a list of numbers"),
])
def test_an_endpoint_that_is_not_openai_compatible(server, sleeps, reply, what) -> None:
    server.script(reply)
    with pytest.raises(EmbeddingError) as info:
        make(server, sleeps).embed_query("x")
    assert str(info.value) == (f"The embedding service at {server.base_url} {what}. Check embedding.base-url "
                               "(it usually ends in /v1).")
    assert info.value.kind == "malformed" and len(server.requests) == 1 and sleeps == []


def _answer_for(text: str) -> Reply:
    vector = [float(x) for x in fake_vector(text, 16)]
    return Reply.json(200, {"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": vector}],
                            "model": MODEL, "usage": {"prompt_tokens": 1, "total_tokens": 1}})


def test_a_server_that_drips_bytes_is_cut_off_at_the_timeout(server, sleeps) -> None:
    # One byte every 0.1 s never trips a per-read timeout of 0.5 s; the attempt's deadline does.
    server.always(Reply.drip(_answer_for("x"), every=0.1))  # the whole answer would take seconds
    with pytest.raises(EmbeddingError) as info:
        make(server, sleeps, timeout=0.5, max_retries=1, clock=frozen_clock).embed_query("x")
    assert str(info.value) == (f"The embedding service at {server.base_url} did not answer within 0.5 s "
                               "(2 attempts). Try again, or raise embedding.timeout.")
    assert info.value.kind == "timeout" and arrived(server, 2) and 0.375 <= sleeps[0] <= 0.5


def test_retry_after_hints_cannot_stretch_a_call_beyond_its_overall_deadline(server, sleeps) -> None:
    # deadline = 4 attempts x 0.5 s + backoff 0.5 + 1 + 2 = 5.5 s: two 2-second waits fit, a third does not
    server.always(OpenAIEmbeddingServer.rate_limited(retry_after="2"))
    with pytest.raises(EmbeddingError, match=r"rate limiting requests \(HTTP 429\), still after 3 attempts"):
        make(server, sleeps, timeout=0.5, max_retries=3, clock=frozen_clock).embed_query("x")
    assert sleeps == [2.0, 2.0] and len(server.requests) == 3


@pytest.mark.milvus
def test_the_cli_exits_2_with_one_line_for_garbage_json(tmp_path, capsys, monkeypatch) -> None:
    from rag_core import cli

    for var in ("RAG_CONFIG", "RAG_EMBEDDING_PROVIDER", "MILVUS_URI"):
        monkeypatch.delenv(var, raising=False)
    with OpenAIEmbeddingServer(api_key=None) as server:
        url = server.base_url
        server.always(Reply(200, b'{"object": "list", "data": [{"emb', {"Content-Type": "application/json"}))
        code = cli.main(["--data-dir", str(tmp_path), "--set", "embedding.provider=openai",
                         "--set", f"embedding.base-url={url}", "--set", f"embedding.model={MODEL}",
                         "search", "disk full"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and "Traceback" not in err
    assert err.strip().splitlines()[-1] == (
        f"error: The embedding service at {url} answered with broken JSON (application/json) instead "
        "of the API's JSON: '{\"object\": \"list\", \"data\": [{\"emb'. Check embedding.base-url (it usually ends "
        "in /v1).")

"""`/api/chat` under load and when its client leaves, against a chat model behind the slow OpenAI-compatible
server (the real `openai` SDK): turns run in threads of their own, at most api.chat-turns at once (503 with
Retry-After beyond), and a turn whose client disconnected stops and is not recorded. Turns are made to run at once by
holding the model's answers (SlowOpenAIChatServer.hold), so "it did not wait behind them" is an order, not a time."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.e2e.slow_chat import SlowOpenAIChatServer
from tests.helpers import wait_until
from tests.servers.chat import Completion
from tests.service import live
from tests.service.conftest import CHAT_KEY, model_settings, serve

GAP = 0.2  # seconds between the slow model's SSE events


@pytest.fixture(scope="module")
def slow_model() -> Iterator[SlowOpenAIChatServer]:
    server = SlowOpenAIChatServer(api_key=CHAT_KEY, gap=GAP).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def model_server(kb, slow_model: SlowOpenAIChatServer) -> Iterator[live.LiveServer]:
    server = serve(kb, env={"OPENAI_API_KEY": CHAT_KEY}, **model_settings(slow_model.base_url))
    yield server
    server.stop()


@pytest.fixture
def model(slow_model: SlowOpenAIChatServer) -> Iterator[SlowOpenAIChatServer]:
    slow_model.reset()
    slow_model.release()
    slow_model.finished.clear()
    yield slow_model
    slow_model.release()
    # the model server notes a finished answer after its last pause: let it, before the next test clears them
    wait_until(lambda: len(slow_model.finished) >= len(slow_model.chat_requests()), timeout=60)


def chat(client: httpx.Client, i: int) -> httpx.Response:
    return client.post("/api/chat", json={"Id": f"load-{i}", "Question": f"question {i}"})


def test_forty_two_slow_turns_leave_health_and_documents_fast(model_server: live.LiveServer,
                                                              model: SlowOpenAIChatServer):
    n, pieces = 42, 12
    model.reply(*[Completion.say(" ".join(f"w{k}" for k in range(pieces)), parts=pieces)] * n)
    model.hold()  # every turn waits for its model until the end of the checks
    limits = httpx.Limits(max_connections=n + 5, max_keepalive_connections=n + 5)
    with httpx.Client(base_url=model_server.url, timeout=60, limits=limits) as client, ThreadPoolExecutor(n) as pool:
        answers = [pool.submit(chat, client, i) for i in range(n)]
        # more turns waiting for their model than the default thread pool has threads (40): none waits for a thread
        assert wait_until(lambda: len(model.requests) == n, timeout=60)
        with httpx.Client(base_url=model_server.url, timeout=60) as other:  # and these wait for none of the turns
            assert [other.get(path).status_code for path in ("/v1/health", "/v1/documents", "/v1/health")] == [200] * 3
        assert not any(a.done() for a in answers)
        model.release()
        results = [a.result().json()["data"] for a in answers]
    assert all(r["success"] and r["answer"].startswith("w0 w1") for r in results)
    assert model_server.service.chat_turns.active == 0


def test_beyond_api_chat_turns_is_503_with_retry_after_at_once(kb, model: SlowOpenAIChatServer):
    server = serve(kb, env={"OPENAI_API_KEY": CHAT_KEY}, api__chat_turns=2, **model_settings(model.base_url))
    try:
        model.reply(*[Completion.say("a slow answer in several pieces", parts=6)] * 3)
        model.hold()  # the two turns wait for their model until the third is answered
        with httpx.Client(base_url=server.url, timeout=60) as client, ThreadPoolExecutor(2) as pool:
            running = [pool.submit(chat, client, i) for i in range(2)]
            assert wait_until(lambda: len(model.requests) == 2, timeout=60)
            refused = chat(client, 2)  # not queued behind the running turns: they cannot end before it
            assert not any(r.done() for r in running)
            model.release()
            assert refused.status_code == 503 and refused.headers["retry-after"] == "5"
            body = refused.json()
            assert body["code"] == 503 and "api.chat-turns" in body["message"] and body["data"] is None
            assert [r.result().json()["data"]["success"] for r in running] == [True, True]
            assert server.service.chat_turns.active == 0
            again = chat(client, 3).json()["data"]  # capacity is back
            assert again["success"] is True
    finally:
        server.stop()


def test_a_client_that_leaves_stops_the_turn_unrecorded(model_server: live.LiveServer, model: SlowOpenAIChatServer):
    model.reply(Completion.say(" ".join(f"word{k}" for k in range(200)), parts=200))  # 40 s if not stopped
    with httpx.Client(base_url=model_server.url, timeout=httpx.Timeout(10, read=0.8)) as client:
        with pytest.raises(httpx.ReadTimeout):  # the client gives up and closes its connection
            client.post("/api/chat", json={"Id": "left-1", "Question": "tell me everything"})
    # the model's HTTP stream was closed by our side long before its end ...
    assert wait_until(lambda: model.finished, timeout=60), "the model server is still writing"
    assert model.finished == [False]  # (True had it written all 200 pieces)
    assert wait_until(lambda: model_server.service.chat_turns.active == 0, timeout=60)
    # ... and the turn is not in the session's history, nor recorded as answered (the turns /api/feedback rates)
    model.reply(Completion.say("a short answer", parts=1))
    with httpx.Client(base_url=model_server.url, timeout=60) as client:
        assert client.get("/api/chat/session/left-1").json()["data"]["messagePairCount"] == 0
        assert client.post("/api/chat", json={"Id": "stayed-1", "Question": "and briefly?"}).json()["data"]["success"]
        rate = {"turnIndex": 0, "rating": "down", "comment": "issue 21 item 3"}
        assert client.post("/api/feedback", json={"sessionId": "stayed-1", **rate}).status_code == 200
        assert client.post("/api/feedback", json={"sessionId": "left-1", **rate}).status_code == 404
        questions = [turn["question"] for turn in client.get("/api/feedback").json()["data"]]
        assert "and briefly?" in questions and "tell me everything" not in questions
    assert len(model.chat_requests()) == 2

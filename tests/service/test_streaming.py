"""Streamed turns against a chat model behind a slow OpenAI-compatible server (the real `openai` SDK): the
answer arrives piece by piece, a client that leaves stops the turn, several streams run at once. What ran at once
is shown by holding the model's answers (requests that reached it together), never by timing the streams."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from rag_core.agent.events import ContentEvent, DoneEvent, ErrorEvent, NoticeEvent
from rag_core.service.streaming import EventPump, payloads
from tests.e2e.slow_chat import SlowOpenAIChatServer
from tests.helpers import wait_until
from tests.servers.chat import Completion, tool_call
from tests.service import live
from tests.service.conftest import CHAT_KEY, model_settings, serve


@pytest.fixture(scope="module")
def slow_model() -> Iterator[SlowOpenAIChatServer]:
    server = SlowOpenAIChatServer(api_key=CHAT_KEY, gap=0.2).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def model_server(kb, slow_model: SlowOpenAIChatServer) -> Iterator[live.LiveServer]:
    server = serve(kb, env={"OPENAI_API_KEY": CHAT_KEY}, **model_settings(slow_model.base_url))
    yield server
    server.stop()


@pytest.fixture
def model_client(model_server: live.LiveServer, slow_model: SlowOpenAIChatServer) -> Iterator[httpx.Client]:
    slow_model.reset()
    slow_model.release()
    slow_model.finished.clear()
    yield from live.clients(model_server)


LONG = " ".join(f"word{n}" for n in range(200))


def test_full_stream_with_a_tool_call_is_recorded(model_client: httpx.Client, slow_model: SlowOpenAIChatServer):
    slow_model.reply(Completion.calls(tool_call("search_knowledge_base", {"query": "disk full"})),
                     lambda req: Completion.say(f"Free space first [{first_key(req)}].", parts=3))
    events = live.stream(model_client, "/api/chat_stream", {"Id": "full-1", "Question": "disk full?"})
    types = [e["type"] for e in events]
    assert types[:3] == ["session", "tool_call", "tool_result"] and types[-2:] == ["citations", "done"]
    citations = events[-2]["data"]
    assert citations["citations"] and citations["unverified_citations"] == [] and citations["mode"] == "model"
    text = live.content_of(events)
    info = model_client.get("/api/chat/session/full-1").json()["data"]
    assert info["messagePairCount"] == 1 and info["history"][0]["answer"] == text
    assert wait_until(lambda: len(slow_model.finished) == 2, timeout=60) and slow_model.finished == [True, True]


def first_key(request: Any) -> str:
    import json

    tool_message = next(m for m in request.json["messages"] if m["role"] == "tool")
    return json.loads(tool_message["content"])["results"][0]["document_id"]


def test_client_that_disconnects_stops_the_turn(model_client: httpx.Client, model_server: live.LiveServer,
                                                slow_model: SlowOpenAIChatServer):
    slow_model.reply(Completion.say(LONG, parts=200))  # 200 pieces, 0.2 s apart: 40 s if nobody stops it
    with model_client.stream("POST", "/api/chat_stream", json={"Id": "gone-1", "Question": "tell me"}) as r:
        for event in live.sse_events(r):
            if event["type"] == "content":
                break  # the reader leaves after the first piece
    # The turn stopped: the model's HTTP stream was closed by our side long before its end ...
    assert wait_until(lambda: slow_model.finished, timeout=60), "the model server is still writing"
    assert slow_model.finished == [False]  # (True had it written all 200)
    assert model_server.wait_streams_closed() == 0
    # ... and the unfinished turn is not in the history (it never ended). No need to wait for that: the turn
    # closes the model's stream as its generator is closed, and a closed generator records nothing any more.
    assert model_client.get("/api/chat/session/gone-1").json()["data"]["messagePairCount"] == 0
    assert len(slow_model.chat_requests()) == 1  # no further model call was made


def test_concurrent_streams_each_get_their_own_answer(model_client: httpx.Client, slow_model: SlowOpenAIChatServer):
    n = 4
    slow_model.reply(*[lambda req: Completion.say(f"echo: {req.json['messages'][-1]['content']}", parts=8)] * n)
    results: dict[int, list[dict[str, Any]]] = {}

    def run(i: int) -> None:
        with httpx.Client(base_url=str(model_client.base_url), timeout=60) as c:
            results[i] = live.stream(c, "/api/chat_stream", {"Id": f"conc-{i}", "Question": f"question number {i}"})

    slow_model.hold()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    # they ran at once: all four turns were waiting for the model together (it answers none until released)
    assert wait_until(lambda: len(slow_model.chat_requests()) == n, timeout=60)
    slow_model.release()
    for t in threads:
        t.join(timeout=60)
    assert sorted(results) == list(range(n))
    for i, events in results.items():
        assert events[0]["data"]["id"] == f"conc-{i}" and events[-1]["type"] == "done"
        assert live.content_of(events) == f"echo: question number {i}"


def test_model_failure_is_an_error_event_then_done(model_client: httpx.Client, slow_model: SlowOpenAIChatServer):
    slow_model.reply(slow_model.server_error(500), slow_model.server_error(503))
    events = live.stream(model_client, "/api/chat_stream", {"Id": "err-1", "Question": "hello"})
    assert [e["type"] for e in events] == ["session", "error", "done"]
    assert events[1]["kind"] == "server" and CHAT_KEY not in str(events)
    r = model_client.post("/api/chat", json={"Id": "err-2", "Question": "hello"})
    data = r.json()["data"]  # the seed answers 200 with success false
    assert r.status_code == 200 and data["success"] is False and data["errorMessage"]


# ------------------------------------------------------------------------------------------ units
class Blocking:
    """An iterator whose next() blocks until released; records close()."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        self.closed = 0

    def __iter__(self) -> Blocking:
        return self

    def __next__(self) -> int:
        self.entered.set()
        self.release.wait(60)
        return 1

    def close(self) -> None:
        self.closed += 1


def test_pump_stop_while_a_step_runs_closes_after_the_step():
    events = Blocking()
    pump = EventPump(events)
    got: list[Any] = []
    worker = threading.Thread(target=lambda: got.append(pump.next()))
    worker.start()
    assert events.entered.wait(60)
    pump.stop()  # returns at once although the step is running
    assert events.closed == 0
    events.release.set()
    worker.join(60)
    assert got == [1] and events.closed == 1
    pump.stop()
    assert events.closed == 1 and pump.next() != 1  # closed once; nothing more is pulled


def test_pump_stop_when_idle_closes_at_once():
    def gen() -> Iterator[int]:
        try:
            yield 1
            yield 2
        finally:
            closed.append(True)

    closed: list[bool] = []
    pump = EventPump(gen())
    assert pump.next() == 1
    pump.stop()
    assert closed == [True]


def test_terminal_events_end_with_done():
    assert [p["type"] for p in payloads(ErrorEvent("boom", "server", 1))] == ["error", "done"]
    done = payloads(DoneEvent("text", ("a#chunk-1",), (), ("a#chunk-1",), 1, "model"))
    assert [p["type"] for p in done] == ["citations", "done"] and "text" not in done[0]["data"]
    assert payloads(ContentEvent("piece", 1)) == [{"type": "content", "data": "piece"}]
    assert payloads(NoticeEvent("retry", "waiting", 1))[0] == {
        "type": "notice",
        "data": {"kind": "retry", "message": "waiting", "step": 1},
    }


def test_a_long_step_is_covered_by_keepalive_comments():
    from rag_core.service.streaming import KEEPALIVE, sse

    covered = threading.Event()  # two keep-alives went out while the step ran

    def slow() -> Iterator[Any]:  # a step (run in a thread) that lasts until then, however slow the machine
        assert covered.wait(60)
        yield ContentEvent("late", 1)

    async def collect() -> list[bytes]:
        chunks = []
        async for chunk in sse(slow(), keepalive=0.1):
            chunks.append(chunk)
            if chunks.count(KEEPALIVE) == 2:
                covered.set()
        return chunks

    chunks = live.run_async(collect())
    assert chunks.count(KEEPALIVE) >= 2 and chunks.index(KEEPALIVE) < chunks.index(b'data: {"type": "content", '
                                                                                   b'"data": "late"}\n\n')
    assert chunks[-1] == b'data: {"type": "done", "data": null}\n\n'

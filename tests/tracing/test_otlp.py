"""Export by OTLP/HTTP (protobuf) to a loopback receiver that decodes what a collector receives; a receiver that
hangs or answers 500 costs spans (counted), never the turn or its time."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from rag_core import tracing
from rag_core.agent import DoneEvent
from rag_core.config import load_settings
from rag_core.retrieval import KnowledgeRetriever
from rag_core.tracing import semconv as sc
from tests.servers import Reply
from tests.servers.chat import Completion, OpenAIChatServer, tool_call
from tests.servers.otlp import OTLPReceiver
from tests.tracing.conftest import CHAT_KEY, EMBED_KEY, make_agent

TOKEN = "collector-SECRET-token-41af"


@pytest.fixture
def receiver() -> Iterator[OTLPReceiver]:
    yield from OTLPReceiver().serve()


def _export_to(receiver: OTLPReceiver, tmp_path, **settings: object) -> None:
    values = {"tracing.otlp-endpoint": receiver.endpoint, "tracing.export-timeout": 0.5, **settings}
    env = {"RAG_TRACE_HEADERS": f"Authorization=Bearer {TOKEN}"}
    config = tracing.config_from_settings(load_settings(tmp_path, overrides={**values,
                                                                           "tracing.headers-env": "RAG_TRACE_HEADERS"},
                                                        env={}), env)
    tracing.install(config)


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    yield
    tracing.install(tracing.TracingConfig(), pinned=False)


def _turn(retriever: KnowledgeRetriever, chat_server: OpenAIChatServer) -> tuple[DoneEvent, float]:
    chat_server.reply(Completion.calls(tool_call("search_knowledge_base", {"query": "cpu high"})),
                      lambda req: Completion.say("Restart it [runbooks/cpu_high.md#chunk-1]."))
    started = time.perf_counter()
    events = list(make_agent(retriever, chat_server).run("What do I do when CPU is high?"))
    assert isinstance(events[-1], DoneEvent), events[-1]
    return events[-1], time.perf_counter() - started


def _wait(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_collector_receives_the_turn_as_one_trace_with_the_token_and_no_secret(
        retriever: KnowledgeRetriever, chat_server: OpenAIChatServer, receiver: OTLPReceiver, tmp_path) -> None:
    _export_to(receiver, tmp_path)
    done, _ = _turn(retriever, chat_server)
    tracing.tracer()  # the provider in place
    _wait(lambda: any(s.name == "agent.turn" for s in receiver.spans()))
    spans = receiver.spans()
    assert {s.trace_id for s in spans} == {done.trace_id}
    names = {s.name for s in spans}
    assert {"agent.turn", "chat.completions", "search_knowledge_base", "retrieve", "embed", "rerank",
            "embedding.request"} <= names
    (retrieve,) = [s for s in spans if s.name == "retrieve"]
    assert retrieve.attributes[sc.document(0, sc.DOCUMENT_ID)] == done.evidence_keys[0]
    assert spans[0].resource["service.name"] == "rag-workbench"
    assert {r.header("authorization") for r in receiver.requests} == {f"Bearer {TOKEN}"}
    for request in receiver.requests:  # what a collector stores: no key of any service, nor its own token
        for secret in (CHAT_KEY, EMBED_KEY, TOKEN):
            assert secret.encode() not in request.body
    assert tracing.stats()["exported"] >= len(spans) and tracing.stats()["dropped"] == 0


def test_a_hanging_collector_neither_blocks_nor_fails_a_turn_and_dropped_spans_are_counted(
        retriever: KnowledgeRetriever, chat_server: OpenAIChatServer, receiver: OTLPReceiver, tmp_path) -> None:
    receiver.always(Reply(200, b"", delay=30))
    _export_to(receiver, tmp_path, **{"tracing.queue-size": 4})
    _, seconds = _turn(retriever, chat_server)
    assert seconds < 3
    assert tracing.stats()["dropped"] > 0  # more spans than the queue holds, while the collector hangs
    _wait(lambda: tracing.stats()["failed"] > 0)  # the export in flight gave up after tracing.export-timeout


def test_a_collector_answering_500_costs_spans_not_the_turn(
        retriever: KnowledgeRetriever, chat_server: OpenAIChatServer, receiver: OTLPReceiver, tmp_path) -> None:
    receiver.always(Reply.text(500, "internal error"))
    _export_to(receiver, tmp_path)
    _, seconds = _turn(retriever, chat_server)
    assert seconds < 3
    _wait(lambda: tracing.stats()["failed"] > 0)
    assert tracing.stats()["exported"] == 0

"""Export by OTLP/HTTP (protobuf) to a loopback receiver that decodes what a collector receives; a receiver that
hangs or answers 500 costs spans (counted), never the turn or its time.

What was exported is read after a force-flush of the provider (it returns once every ended span was handed to the
receiver and its answer counted), never after a sleep; "never the turn's time" is an order: the turn is over while
the collector has not answered anything yet."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from rag_core import tracing
from rag_core.agent import DoneEvent
from rag_core.config import load_settings
from rag_core.retrieval import KnowledgeRetriever
from rag_core.tracing import semconv as sc
from tests.contracts.remote import GENEROUS, HANG
from tests.helpers import wait_until
from tests.servers import RecordedRequest, Reply
from tests.servers.chat import Completion, OpenAIChatServer, tool_call
from tests.servers.otlp import OTLPReceiver
from tests.tracing.conftest import CHAT_KEY, EMBED_KEY, make_agent

TOKEN = "collector-SECRET-token-41af"
LONGEST = 120.0  # the longest tracing.export-timeout allowed


@pytest.fixture
def receiver() -> Iterator[OTLPReceiver]:
    yield from OTLPReceiver().serve()


def _export_to(receiver: OTLPReceiver, tmp_path, **settings: object):
    """The process's tracing exporting to `receiver` (tracing.export-timeout generous unless given); its provider."""
    values = {"tracing.otlp-endpoint": receiver.endpoint, "tracing.export-timeout": GENEROUS, **settings}
    env = {"RAG_TRACE_HEADERS": f"Authorization=Bearer {TOKEN}"}
    config = tracing.config_from_settings(load_settings(tmp_path, overrides={**values,
                                                                           "tracing.headers-env": "RAG_TRACE_HEADERS"},
                                                        env={}), env)
    return tracing.install(config)


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    yield
    tracing.install(tracing.TracingConfig(), pinned=False)


def _turn(retriever: KnowledgeRetriever, chat_server: OpenAIChatServer) -> DoneEvent:
    chat_server.reply(Completion.calls(tool_call("search_knowledge_base", {"query": "cpu high"})),
                      lambda req: Completion.say("Restart it [runbooks/cpu_high.md#chunk-1]."))
    events = list(make_agent(retriever, chat_server).run("What do I do when CPU is high?"))
    assert isinstance(events[-1], DoneEvent), events[-1]
    return events[-1]


def test_a_collector_receives_the_turn_as_one_trace_with_the_token_and_no_secret(
        retriever: KnowledgeRetriever, chat_server: OpenAIChatServer, receiver: OTLPReceiver, tmp_path) -> None:
    provider = _export_to(receiver, tmp_path)
    done = _turn(retriever, chat_server)
    assert provider.force_flush()  # every span of the turn is with the receiver, and counted
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
    answer = threading.Event()  # the collector answers nothing until the test says so

    def hang(request: RecordedRequest) -> Reply:
        answer.wait(LONGEST)
        return Reply.text(500, "answered late")

    receiver.always(hang)
    _export_to(receiver, tmp_path, **{"tracing.queue-size": 4, "tracing.export-timeout": LONGEST})
    try:
        _turn(retriever, chat_server)  # the turn is done ...
        # ... and no export has ended: none answered, none gave up (its timeout is the longest allowed). Had the turn
        # waited for an export, one would have ended (answered or timed out) before the turn could.
        assert tracing.stats()["exported"] == 0 and tracing.stats()["failed"] == 0
        assert tracing.stats()["dropped"] > 0  # more spans than the queue holds, while the collector hangs
    finally:
        answer.set()
    assert wait_until(lambda: tracing.stats()["failed"] > 0, GENEROUS)  # the export in flight: answered 500


def test_an_export_that_hangs_gives_up_after_the_export_timeout(receiver: OTLPReceiver, tmp_path) -> None:
    receiver.always(Reply(200, b"", delay=HANG))
    provider = _export_to(receiver, tmp_path, **{"tracing.export-timeout": 0.5})
    with tracing.span("lonely"):
        pass
    assert provider.force_flush()  # returns once the export gave up
    assert (tracing.stats()["exported"], tracing.stats()["failed"]) == (0, 1)


def test_a_collector_answering_500_costs_spans_not_the_turn(
        retriever: KnowledgeRetriever, chat_server: OpenAIChatServer, receiver: OTLPReceiver, tmp_path) -> None:
    receiver.always(Reply.text(500, "internal error"))
    provider = _export_to(receiver, tmp_path)
    _turn(retriever, chat_server)
    assert provider.force_flush()
    assert tracing.stats()["failed"] > 0 and tracing.stats()["exported"] == 0

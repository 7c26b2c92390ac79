"""Traces through the real service (uvicorn on loopback, the real knowledge base, a chat model behind the loopback
OpenAI server, Prometheus behind its loopback server): a turn on `/api/chat`, `/api/chat_stream` or `/api/ai_ops`
is exactly one trace, with its model calls, tool calls and the lookup's stages under it, although the service runs
its steps in worker threads; the answer names that trace, and `/api/feedback` rates the turn by it. A `/v1/search`
is one trace too."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from rag_core import tracing
from rag_core.tracing import semconv as sc
from tests.helpers import wait_until
from tests.servers.chat import Completion, OpenAIChatServer, tool_call
from tests.servers.prometheus import PrometheusServer, alert
from tests.service import live
from tests.service.conftest import CHAT_KEY, model_settings, serve

QUESTION = "How do I handle HighCPUUsage? (traced)"
STAGES = ("embed", "postprocess", "projection")  # every lookup's; the search stage is named for its mode


@pytest.fixture(scope="module")
def chat_model() -> Iterator[OpenAIChatServer]:
    with OpenAIChatServer(api_key=CHAT_KEY) as server:
        yield server


@pytest.fixture(scope="module")
def prometheus() -> Iterator[PrometheusServer]:
    with PrometheusServer() as server:
        server.alerts = [alert("HighCPUUsage", "CPU usage above 85% on node-3", labels={"instance": "node-3"})]
        yield server


@pytest.fixture(scope="module")
def server(kb, chat_model: OpenAIChatServer, prometheus: PrometheusServer) -> Iterator[live.LiveServer]:
    server = serve(kb, env={"OPENAI_API_KEY": CHAT_KEY}, prometheus__url=prometheus.url, prometheus__max_retries=0,
                   **model_settings(chat_model.base_url))
    yield server
    server.stop()


@pytest.fixture
def client(server: live.LiveServer) -> Iterator[httpx.Client]:
    yield from live.clients(server)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    tracing.install(tracing.TracingConfig(), exporter, simple=True)
    yield exporter
    tracing.install(tracing.TracingConfig(), pinned=False)


def _ended(spans: InMemorySpanExporter, root: str) -> list[ReadableSpan]:
    """Every span once the root span has ended (a stream's last event can reach the client just before)."""
    assert wait_until(lambda: any(s.name == root for s in spans.get_finished_spans()), timeout=60)
    return list(spans.get_finished_spans())


def _one_trace(finished: list[ReadableSpan], root: str) -> tuple[str, ReadableSpan, dict[str, list[ReadableSpan]]]:
    trace_ids = {format(s.context.trace_id, "032x") for s in finished}
    assert len(trace_ids) == 1, sorted((format(s.context.trace_id, "032x"), s.name) for s in finished)
    (top,) = [s for s in finished if s.parent is None]
    assert top.name == root
    by_id = {s.context.span_id: s for s in finished}
    assert all(s.parent.span_id in by_id for s in finished if s.parent is not None)  # no orphan: one tree
    names: dict[str, list[ReadableSpan]] = {}
    for s in finished:
        names.setdefault(s.name, []).append(s)
    return trace_ids.pop(), top, names


def _parent(span: ReadableSpan, names: dict[str, list[ReadableSpan]], parent: str) -> bool:
    return any(span.parent is not None and span.parent.span_id == p.context.span_id for p in names.get(parent, []))


def _check_lookup(names: dict[str, list[ReadableSpan]], under: str) -> None:
    (retrieve,) = names["retrieve"]
    assert _parent(retrieve, names, under) and retrieve.attributes[sc.SPAN_KIND] == sc.RETRIEVER
    keys = list(retrieve.attributes[sc.EVIDENCE_KEYS])
    assert keys and retrieve.attributes[sc.document(0, sc.DOCUMENT_ID)] == keys[0]
    assert retrieve.attributes[sc.document(0, sc.DOCUMENT_CONTENT)]
    for stage in STAGES:
        (span,) = names[stage]
        assert _parent(span, names, "retrieve") and span.end_time > span.start_time, stage
    assert [n for n in names if n.endswith("_search") and _parent(names[n][0], names, "retrieve")]


def _tools(names: dict[str, list[ReadableSpan]]) -> list[ReadableSpan]:
    return [s for spans in names.values() for s in spans if s.attributes[sc.SPAN_KIND] == sc.TOOL]


def _script_turn(chat_model: OpenAIChatServer) -> None:
    chat_model.reset()
    chat_model.reply(Completion.calls(tool_call("search_knowledge_base", {"query": "HighCPUUsage"})),
                     lambda req: Completion.say("Find the busiest process first."))


def _rate(client: httpx.Client, trace_id: str) -> dict[str, Any]:
    r = client.post("/api/feedback", json={"traceId": trace_id, "rating": "down", "comment": "traced"})
    assert r.status_code == 200, r.text
    return r.json()["data"]


def test_a_chat_turn_is_one_trace_named_by_its_answer_and_rated_by_it(
        client: httpx.Client, chat_model: OpenAIChatServer, spans: InMemorySpanExporter) -> None:
    _script_turn(chat_model)
    r = client.post("/api/chat", json={"Question": QUESTION})
    assert r.status_code == 200 and r.json()["data"]["success"], r.text
    answer = r.json()["data"]
    trace_id, turn, names = _one_trace(_ended(spans, "agent.turn"), "agent.turn")
    assert answer["traceId"] == trace_id and turn.attributes[sc.INPUT_VALUE] == QUESTION
    llm = names["chat.completions"]
    assert len(llm) == 2 and all(_parent(s, names, "agent.turn") for s in llm)
    assert {s.attributes[sc.LLM_MODEL_NAME] for s in llm} == {"test-chat"}
    assert all(s.attributes[sc.LLM_TOKEN_COUNT_TOTAL] == 15 for s in llm)
    # the step that called the tool shows the call as its output
    calling = min(llm, key=lambda s: s.start_time)
    assert calling.attributes[sc.tool_call(0, 0, sc.TOOL_CALL_FUNCTION_NAME)] == "search_knowledge_base"
    assert "HighCPUUsage" in calling.attributes[sc.tool_call(0, 0, sc.TOOL_CALL_FUNCTION_ARGUMENTS)]
    assert "search_knowledge_base" in calling.attributes[sc.OUTPUT_VALUE]
    (tool,) = names["search_knowledge_base"]
    assert _parent(tool, names, "agent.turn")
    _check_lookup(names, "search_knowledge_base")
    assert {s.status.status_code for ss in names.values() for s in ss} == {StatusCode.OK}  # none left Unset
    rated = _rate(client, trace_id)
    assert (rated["question"], rated["rating"], rated["traceId"]) == (QUESTION, "down", trace_id)


def test_a_streamed_turn_is_one_trace_named_by_its_citations_event_and_rated_by_it(
        client: httpx.Client, chat_model: OpenAIChatServer, spans: InMemorySpanExporter) -> None:
    _script_turn(chat_model)
    events = live.stream(client, "/api/chat_stream", {"Question": QUESTION})
    (citations,) = [e["data"] for e in events if e["type"] == "citations"]
    # each step of the stream ran in whichever worker thread was free: still one trace
    trace_id, _, names = _one_trace(_ended(spans, "agent.turn"), "agent.turn")
    assert citations["trace_id"] == trace_id and citations["turn_index"] >= 0
    assert len(names["chat.completions"]) == 2 and all(_parent(s, names, "agent.turn")
                                                         for s in names["chat.completions"])
    _check_lookup(names, "search_knowledge_base")
    assert _rate(client, trace_id)["question"] == QUESTION


def test_an_alert_triage_is_one_trace_named_by_its_citations_event_and_rated_by_it(
        client: httpx.Client, chat_model: OpenAIChatServer, spans: InMemorySpanExporter) -> None:
    chat_model.reset()
    chat_model.reply(Completion.say("## HighCPUUsage\nFind the busiest process first."))
    events = live.stream(client, "/api/ai_ops", headers={"Content-Type": "application/json"})
    (citations,) = [e["data"] for e in events if e["type"] == "citations"]
    trace_id, triage, names = _one_trace(_ended(spans, "triage"), "triage")
    assert citations["trace_id"] == trace_id and citations["mode"] == "model"
    assert [s.name for s in sorted(_tools(names), key=lambda s: s.start_time)] == [
        "query_prometheus_alerts", "search_knowledge_base"]
    assert all(_parent(s, names, "triage") for s in _tools(names))
    (llm,) = names["chat.completions"]
    assert _parent(llm, names, "triage") and llm.attributes[sc.LLM_MODEL_NAME] == "test-chat"
    _check_lookup(names, "search_knowledge_base")
    rated = _rate(client, trace_id)
    assert "HighCPUUsage" in rated["question"] and rated["lookups"][0]["evidenceKeys"]
    assert rated["answer"] == live.content_of(events) and rated["mode"] == "model"


def test_a_search_is_one_trace(client: httpx.Client, spans: InMemorySpanExporter) -> None:
    r = client.get("/v1/search", params={"query": "disk full", "return_n": 2})
    assert r.status_code == 200, r.text
    _, _, names = _one_trace(_ended(spans, "retrieve"), "retrieve")
    (retrieve,) = names["retrieve"]
    assert list(retrieve.attributes[sc.EVIDENCE_KEYS]) == [p["document_id"] for p in r.json()["projection"]]
    for stage in STAGES:
        assert _parent(names[stage][0], names, "retrieve"), stage


def test_an_explanation_is_one_trace_over_http_and_mcp(client: httpx.Client, server: live.LiveServer,
                                                       spans: InMemorySpanExporter) -> None:
    # explain ranks every channel over the whole knowledge base besides its lookup: all of it under one span
    r = client.get("/v1/explain", params={"query": "disk full", "expect": "runbooks/disk_full.md"})
    assert r.status_code == 200, r.text
    _, top, names = _one_trace(_ended(spans, "explain"), "explain")
    assert top.attributes[sc.INPUT_VALUE] == "disk full" and top.attributes[sc.OUTPUT_VALUE] == r.json()["verdict"]
    assert _parent(names["retrieve"][0], names, "explain") and len(names["embed"]) >= 2
    assert {s.status.status_code for ss in names.values() for s in ss} == {StatusCode.OK}
    spans.clear()
    from mcp import Client

    async def call() -> Any:
        async with Client(f"{server.url}/mcp") as mcp:
            return await mcp.call_tool("explain", {"query": "disk full", "expect": "runbooks/disk_full.md"})

    assert not live.run_async(call()).is_error
    _one_trace(_ended(spans, "explain"), "explain")

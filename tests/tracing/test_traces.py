"""One chat turn is one trace: the agent span; each model call (model, token counts); each tool call; the lookup
inside it with its stages, and the embedder's and reranker's requests made in worker threads, all under the one
trace id. The retriever span carries the documents in OpenInference's attributes. Content can be left out."""

from __future__ import annotations

import json
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from rag_core import tracing
from rag_core.agent import DoneEvent
from rag_core.retrieval import KnowledgeRetriever
from rag_core.tracing import semconv as sc
from tests.servers.chat import Completion, OpenAIChatServer, tool_call
from tests.tracing.conftest import CHAT_KEY, EMBED_KEY, make_agent

QUESTION = "What do I do when CPU is high?"


def _by_name(spans: Sequence[ReadableSpan]) -> dict[str, list[ReadableSpan]]:
    out: dict[str, list[ReadableSpan]] = {}
    for s in spans:
        out.setdefault(s.name, []).append(s)
    return out


def _ancestors(span: ReadableSpan, spans: Sequence[ReadableSpan]) -> list[str]:
    by_id = {s.context.span_id: s for s in spans}
    names, current = [], span
    while current.parent is not None:
        current = by_id[current.parent.span_id]
        names.append(current.name)
    return names


def _turn(retriever: KnowledgeRetriever, chat_server: OpenAIChatServer) -> DoneEvent:
    chat_server.reply(Completion.calls(tool_call("search_knowledge_base", {"query": "cpu high"})),
                      lambda req: Completion.say("Restart it [runbooks/cpu_high.md#chunk-1]."))
    events = list(make_agent(retriever, chat_server).run(QUESTION))
    done = events[-1]
    assert isinstance(done, DoneEvent), events[-1]
    return done


def test_a_turn_is_one_trace_with_model_calls_tool_lookup_stages_and_worker_requests(
        retriever: KnowledgeRetriever, chat_server: OpenAIChatServer, spans: InMemorySpanExporter) -> None:
    done = _turn(retriever, chat_server)
    finished = spans.get_finished_spans()
    assert {format(s.context.trace_id, "032x") for s in finished} == {done.trace_id}  # one trace, the turn's
    names = _by_name(finished)
    (turn,) = names["agent.turn"]
    assert turn.parent is None and turn.attributes[sc.SPAN_KIND] == sc.AGENT
    assert turn.attributes[sc.INPUT_VALUE] == QUESTION and turn.attributes[sc.OUTPUT_VALUE] == done.text

    llm = names["chat.completions"]
    assert len(llm) == 2 and all(s.parent.span_id == turn.context.span_id for s in llm)
    assert {s.attributes[sc.LLM_MODEL_NAME] for s in llm} == {chat_server.models[0]}
    assert [(s.attributes[sc.LLM_TOKEN_COUNT_PROMPT], s.attributes[sc.LLM_TOKEN_COUNT_COMPLETION],
             s.attributes[sc.LLM_TOKEN_COUNT_TOTAL]) for s in llm] == [(10, 5, 15)] * 2

    (tool,) = names["search_knowledge_base"]
    assert tool.attributes[sc.SPAN_KIND] == sc.TOOL and tool.parent.span_id == turn.context.span_id
    (retrieve,) = names["retrieve"]
    assert retrieve.parent.span_id == tool.context.span_id and retrieve.attributes[sc.SPAN_KIND] == sc.RETRIEVER
    keys = list(retrieve.attributes[sc.EVIDENCE_KEYS])
    assert keys == list(done.evidence_keys) and len(keys) == 3
    for i, key in enumerate(keys):
        assert retrieve.attributes[sc.document(i, sc.DOCUMENT_ID)] == key
        assert isinstance(retrieve.attributes[sc.document(i, sc.DOCUMENT_SCORE)], float)
        assert retrieve.attributes[sc.document(i, sc.DOCUMENT_CONTENT)]
    assert retrieve.attributes[sc.dropped(0, "reason")]  # the per-document cap of 1 dropped hits, with reasons
    assert json.loads(retrieve.attributes[sc.PARAMS])["return_n"] == 3

    for stage in ("embed", "hybrid_search", "fusion", "rerank", "postprocess", "projection"):
        (span,) = names[stage]
        assert _ancestors(span, finished)[:1] == ["retrieve"], stage
        assert span.end_time > span.start_time
    # The embedder's and reranker's HTTP requests ran in worker threads (remote.deadline): children all the same.
    assert _ancestors(names["embedding.request"][0], finished)[:2] == ["embed", "retrieve"]
    assert _ancestors(names["rerank.request"][0], finished)[:2] == ["rerank", "retrieve"]


def test_no_secret_and_with_capture_content_off_no_content(
        retriever: KnowledgeRetriever, chat_server: OpenAIChatServer, no_content_spans: InMemorySpanExporter) -> None:
    done = _turn(retriever, chat_server)
    finished = no_content_spans.get_finished_spans()
    assert len({s.context.trace_id for s in finished}) == 1 and len(finished) > 10
    dumped = json.dumps([dict(s.attributes) for s in finished], ensure_ascii=False, default=str)
    assert not [k for s in finished for k in s.attributes if sc.is_content(k)]
    assert QUESTION not in dumped and done.text not in dumped and "Escalate" not in dumped
    assert "runbooks/cpu_high.md#chunk-" in dumped  # ids, scores and evidence keys stay
    assert CHAT_KEY not in dumped and EMBED_KEY not in dumped


def test_a_search_outside_a_turn_is_a_trace_of_its_own(retriever: KnowledgeRetriever,
                                                      spans: InMemorySpanExporter) -> None:
    retriever.lookup("disk full")
    retriever.lookup("release freeze")
    roots = [s for s in spans.get_finished_spans() if s.parent is None]
    assert [s.name for s in roots] == ["retrieve", "retrieve"]
    assert roots[0].context.trace_id != roots[1].context.trace_id


REWRITE_HISTORY = ["user: How do I free disk space?", "assistant: Delete old logs [runbooks/disk_full.md#chunk-1]."]


def test_the_rewrite_stage_is_a_span_of_its_own_with_both_questions(retriever: KnowledgeRetriever,
                                                                    spans: InMemorySpanExporter) -> None:
    result = retriever.lookup("Which command shows it?", history=REWRITE_HISTORY)
    finished = spans.get_finished_spans()
    (rewrite,) = _by_name(finished)["rewrite"]
    assert _ancestors(rewrite, finished) == ["retrieve"]
    attributes = dict(rewrite.attributes or {})
    assert attributes[sc.SPAN_KIND] == sc.CHAIN and attributes[sc.STAGE] == "rewrite"
    assert (attributes[sc.REWRITE_OUTCOME], attributes[sc.REWRITE_BY]) == ("rewritten", "offline")
    assert attributes[sc.INPUT_VALUE] == "Which command shows it?" and attributes[sc.OUTPUT_VALUE] == result.searched
    assert result.searched != "Which command shows it?" and attributes[sc.REWRITE_DETAIL]
    spans.clear()
    retriever.lookup("disk full")
    assert "rewrite" not in _by_name(spans.get_finished_spans())  # no conversation: no rewrite stage


def test_with_capture_content_off_the_rewrite_span_holds_no_question(retriever: KnowledgeRetriever,
                                                                     no_content_spans: InMemorySpanExporter) -> None:
    retriever.lookup("Which command shows it?", history=REWRITE_HISTORY)
    (rewrite,) = _by_name(no_content_spans.get_finished_spans())["rewrite"]
    attributes = dict(rewrite.attributes or {})
    assert attributes[sc.REWRITE_OUTCOME] == "rewritten"
    assert not {sc.INPUT_VALUE, sc.OUTPUT_VALUE, sc.REWRITE_DETAIL} & set(attributes)


def test_a_debugger_lookup_is_a_trace_and_a_cached_rerun_one_too(retriever: KnowledgeRetriever,
                                                                spans: InMemorySpanExporter) -> None:
    from ui.lookup import cached_lookup

    cache: dict = {}
    params = retriever.params()
    cached_lookup(retriever, "disk full", params, cache)
    cached_lookup(retriever, "disk full", retriever.params(return_n=2), cache)  # only post-processing runs again
    finished = spans.get_finished_spans()
    roots = [s for s in finished if s.parent is None]
    assert [s.name for s in roots] == ["debugger.lookup", "debugger.lookup"]
    second = {s.name for s in finished if s.context.trace_id == roots[1].context.trace_id}
    # only the assemble stages: no search, no reranker call (merge: when there are blocks to merge)
    assert second - {"merge"} == {"debugger.lookup", "postprocess", "expand", "projection"}
    assert roots[1].attributes[sc.document(0, sc.DOCUMENT_ID)] == roots[0].attributes[sc.document(0, sc.DOCUMENT_ID)]


def test_an_alert_triage_is_one_trace(retriever: KnowledgeRetriever, spans: InMemorySpanExporter) -> None:
    from rag_core.agent import knowledge_base_tool
    from rag_core.agent.triage import Triage
    from rag_core.records import Alert
    from tests.fakes.metrics import FakeMetricsClient

    metrics = FakeMetricsClient([Alert({"alertname": "HighCPU", "app": "order-service"},
                                       {"description": "CPU above 90 percent"}, "firing", "2026-05-10T08:00:00Z")])
    events = list(Triage(metrics, knowledge_base_tool(retriever)).run())
    assert events[-1].type == "done"
    finished = spans.get_finished_spans()
    assert len({s.context.trace_id for s in finished}) == 1
    assert [s.name for s in finished if s.parent is None] == ["triage"]
    assert "retrieve" in {s.name for s in finished}


def test_traces_name_the_phoenix_project_when_tracing_project_is_set(tmp_path) -> None:
    from rag_core.config import load_settings
    from rag_core.tracing.setup import PROJECT, config_from_settings

    exporter = InMemorySpanExporter()
    config = config_from_settings(load_settings(tmp_path, overrides={"tracing.project": "runbooks"}), env={})
    tracing.install(config, exporter, simple=True)
    try:
        with tracing.span("work"):
            pass
        (done,) = exporter.get_finished_spans()
        assert done.resource.attributes[PROJECT] == "runbooks"
        assert done.status.status_code.name == "OK"
    finally:
        tracing.install(tracing.TracingConfig(), pinned=False)
    assert config_from_settings(load_settings(tmp_path), env={}).project == ""  # Phoenix's default project

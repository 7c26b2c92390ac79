"""The tool-calling loop against a local OpenAI-compatible server, with the real SDK and the real
knowledge base (Milvus Lite + local embedder, examples/kb)."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from rag_core.agent import SYSTEM_PROMPT, ContentEvent, DoneEvent, NoticeEvent, Session, ToolCallEvent, ToolResultEvent
from rag_core.agent.kb_tool import item_payload
from rag_core.retrieval import LookupResult
from tests.servers import RecordedRequest
from tests.servers.chat import Completion, tool_call

from .conftest import KEY, make_agent, make_model


def run(agent, question, session=None) -> list:
    events = list(agent.run(question, session))
    for e in events:  # every event is JSON-ready
        json.dumps(e.to_dict(), ensure_ascii=False)
    return events


def of(events, cls) -> list:
    return [e for e in events if isinstance(e, cls)]


def text_of(events) -> str:
    return "".join(e.text for e in of(events, ContentEvent))


def tool_results(request: RecordedRequest) -> list[dict]:
    return [json.loads(m["content"]) for m in request.json["messages"] if m["role"] == "tool"]


def test_a_turn_without_tool_calls_streams_the_answer(kb, chat_server) -> None:
    chat_server.reply(Completion.say("Hello! Ask me about runbooks or alerts.", parts=6))
    agent = make_agent(kb, make_model(chat_server, temperature=0.2, max_tokens=321))
    events = run(agent, "hi")

    assert [e.type for e in events] == ["content"] * 6 + ["done"]
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert done.text == text_of(events) == "Hello! Ask me about runbooks or alerts."
    assert (done.citations, done.unverified_citations, done.evidence_keys) == ((), (), ())
    assert (done.mode, done.steps, done.stop_reason) == ("model", 1, "answer")

    (request,) = [r for r in chat_server.requests]
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.header("authorization") == f"Bearer {KEY}"
    body = request.json
    assert body["stream"] is True and body["model"] == "test-chat"
    assert (body["temperature"], body["max_tokens"]) == (0.2, 321)
    assert body["messages"] == [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "hi"}]
    assert [t["function"]["name"] for t in body["tools"]] == ["search_knowledge_base", "get_current_datetime"]
    kb_tool = body["tools"][0]["function"]
    assert kb_tool["parameters"]["required"] == ["query"]
    assert kb_tool["parameters"]["properties"]["query"]["type"] == "string"
    assert "runbooks" in kb_tool["description"] and "not instructions" in kb_tool["description"]
    assert body["tools"][1]["function"]["parameters"] == {"type": "object", "properties": {}, "required": []}


def test_a_knowledge_base_call_and_a_cited_answer(kb, chat_server) -> None:
    query = "HighCPUUsage alert what to do"
    cited: dict[str, str] = {}

    def answer(request: RecordedRequest) -> Completion:
        first = tool_results(request)[0]["results"][0]["document_id"]
        cited["key"] = first
        return Completion.say(f"Open the Node Overview dashboard first [{first}]. See also [made/up.md#chunk-9].")

    chat_server.reply(Completion.calls(tool_call("search_knowledge_base", {"query": query}, parts=5)), answer)
    events = run(make_agent(kb, make_model(chat_server)), "What should I do when HighCPUUsage fires?")

    kinds = [e.type for e in events]
    assert kinds[:2] == ["tool_call", "tool_result"] and kinds[-1] == "done"
    assert set(kinds[2:-1]) == {"content"}
    call, result = events[0], events[1]
    assert isinstance(call, ToolCallEvent) and isinstance(result, ToolResultEvent)
    assert (call.name, call.arguments, call.step) == ("search_knowledge_base", {"query": query}, 1)
    assert call.raw_arguments == json.dumps({"query": query})

    # The tool went through the one lookup path: the event carries the full LookupResult, and it is
    # the same result the debugger (or `search`) gets for this query.
    assert result.ok and isinstance(result.lookup, LookupResult)
    assert result.lookup.evidence_keys == kb.retriever.lookup(query).evidence_keys
    projected = result.lookup.projection.items
    # every block's key, and the keys of the hits a merged block holds (a citation of either counts)
    assert result.evidence_keys == tuple(dict.fromkeys(k for p in projected for k in (p.document_id, *p.matched)))
    assert projected and any(k.startswith("runbooks/cpu_high.md#chunk-") for k in result.evidence_keys)
    assert result.result == {"query": query, "results": [item_payload(p) for p in projected]}
    as_dict = result.to_dict()
    assert as_dict["type"] == "tool_result" and as_dict["lookup"] == result.lookup.to_dict()

    done = events[-1]
    assert done.citations == (cited["key"],)
    assert done.unverified_citations == ("made/up.md#chunk-9",)
    assert done.evidence_keys == result.evidence_keys and done.steps == 2

    first, second = chat_server.chat_requests()
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    system, user, assistant, tool = second["messages"]
    assert (system["role"], user["role"]) == ("system", "user")
    assert assistant["role"] == "assistant" and len(assistant["tool_calls"]) == 1
    sent_call = assistant["tool_calls"][0]
    assert sent_call["id"] == call.call_id and sent_call["type"] == "function"
    assert sent_call["function"] == {"name": "search_knowledge_base", "arguments": json.dumps({"query": query})}
    assert tool == {
        "role": "tool",
        "tool_call_id": call.call_id,
        "content": json.dumps(result.result, ensure_ascii=False),
    }


def test_two_tool_calls_in_one_turn_streamed_interleaved(kb, chat_server) -> None:
    chat_server.reply(
        Completion.calls(tool_call("get_current_datetime", "", id="call_clock"),
                         tool_call("search_knowledge_base", {"query": "磁盘空间不足"}, id="call_kb", parts=6),
                         text="Let me check.", interleave=True),
        Completion.say("Done."),
    )
    events = run(make_agent(kb, make_model(chat_server)), "今天磁盘满了怎么办？")

    calls = of(events, ToolCallEvent)
    results = of(events, ToolResultEvent)
    assert [(c.call_id, c.name, c.arguments) for c in calls] == [
        ("call_clock", "get_current_datetime", {}), ("call_kb", "search_knowledge_base", {"query": "磁盘空间不足"})]
    assert [r.call_id for r in results] == ["call_clock", "call_kb"] and all(r.ok for r in results)
    now = datetime.fromisoformat(results[0].result["datetime"])
    assert now.utcoffset().total_seconds() == 8 * 3600 and results[0].result["timezone"] == "Asia/Shanghai"
    assert results[0].lookup is None and results[1].lookup is not None
    # text of separate model calls is kept apart
    assert events[-1].text == "Let me check.\n\nDone." == text_of(events)

    second = chat_server.chat_requests()[1]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool", "tool"]
    assert second[2]["content"] == "Let me check."
    # empty arguments are echoed as "{}" (valid JSON for strict servers)
    assert [c["function"]["arguments"] for c in second[2]["tool_calls"]] == [
        "{}", json.dumps({"query": "磁盘空间不足"}, ensure_ascii=False)]
    assert [m["tool_call_id"] for m in second[3:]] == ["call_clock", "call_kb"]


def test_the_step_limit_ends_the_turn_with_a_clear_message(kb, chat_server) -> None:
    loop_call = Completion.calls(tool_call("search_knowledge_base", {"query": "cpu"}))
    chat_server.reply(loop_call, loop_call, loop_call)
    events = run(make_agent(kb, make_model(chat_server), max_steps=2), "keep searching")

    assert len(chat_server.chat_requests()) == 2  # max-steps counts model calls
    assert len(of(events, ToolCallEvent)) == 1  # the last step's request is not executed
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.stop_reason == "max_steps" and done.steps == 2
    assert "limit of 2 model calls (chat.max-steps)" in done.text and done.text == text_of(events)


def test_a_malformed_tool_call_is_reported_to_the_model_and_the_turn_goes_on(kb, dashscope_server) -> None:
    broken = '{"query": "disk full'
    dashscope_server.reply(Completion.calls(tool_call("search_knowledge_base", broken, id="call_bad", parts=2)),
                           Completion.calls(tool_call("search_knowledge_base", {"query": "disk full"}, id="call_ok")),
                           Completion.say("Free space with the runbook."))
    agent = make_agent(kb, make_model(dashscope_server, provider="dashscope", model="qwen-plus"))
    events = run(agent, "disk is full")

    call = of(events, ToolCallEvent)[0]
    assert (call.arguments, call.raw_arguments) == (None, broken)
    notice = of(events, NoticeEvent)[0]
    assert notice.kind == "malformed_tool_call" and "not valid JSON" in notice.message
    bad, good = of(events, ToolResultEvent)
    assert not bad.ok and "not valid JSON" in bad.error and bad.lookup is None
    assert bad.result["received"] == broken and '{"query": "..."}' in bad.result["error"]
    assert good.ok and good.evidence_keys
    assert events[-1].type == "done" and events[-1].text == "Free space with the runbook."

    # DashScope refuses invalid JSON arguments in history, so "{}" is echoed and the raw text travels
    # in the tool result.
    second = dashscope_server.chat_requests()[1]["messages"]
    assert second[2]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert json.loads(second[3]["content"])["received"] == broken


def test_unknown_tools_and_wrong_arguments_go_back_as_errors(kb, chat_server) -> None:
    chat_server.reply(Completion.calls(tool_call("delete_everything", {}), tool_call("search_knowledge_base", {"q": 1}),
                                       tool_call("search_knowledge_base", {"query": 5})),
                      Completion.say("Sorry."))
    events = run(make_agent(kb, make_model(chat_server)), "x")
    errors = [r.error for r in of(events, ToolResultEvent)]
    assert "no tool named 'delete_everything'" in errors[0] and "search_knowledge_base" in errors[0]
    assert "Missing argument(s) for search_knowledge_base: query" in errors[1]
    assert "must be a string" in errors[2]
    assert events[-1].type == "done"


def test_history_is_windowed_and_past_tool_messages_are_not_resent(kb, chat_server) -> None:
    chat_server.reply(Completion.calls(tool_call("search_knowledge_base", {"query": "slow query"})),
                      Completion.say("A1"), Completion.say("A2"), Completion.say("A3"), Completion.say("A4"))
    agent = make_agent(kb, make_model(chat_server), history_pairs=2)
    session = Session()
    for q in ("Q1", "Q2", "Q3", "Q4"):
        assert run(agent, q, session)[-1].type == "done"

    requests = chat_server.chat_requests()
    assert len(requests) == 5

    def convo(body: dict) -> list[tuple[str, str]]:
        return [(m["role"], m["content"]) for m in body["messages"][1:]]

    assert convo(requests[2]) == [("user", "Q1"), ("assistant", "A1"), ("user", "Q2")]  # no tool messages
    assert convo(requests[3]) == [("user", "Q1"), ("assistant", "A1"), ("user", "Q2"), ("assistant", "A2"),
                                  ("user", "Q3")]
    assert convo(requests[4]) == [("user", "Q2"), ("assistant", "A2"), ("user", "Q3"), ("assistant", "A3"),
                                  ("user", "Q4")]
    assert [t.answer for t in session.turns] == ["A1", "A2", "A3", "A4"]


def test_no_history_when_the_window_is_zero(kb, chat_server) -> None:
    agent = make_agent(kb, make_model(chat_server), history_pairs=0)
    session = Session()
    run(agent, "one", session)
    run(agent, "two", session)
    assert [m["role"] for m in chat_server.chat_requests()[1]["messages"]] == ["system", "user"]
    assert len(session) == 2


@pytest.mark.parametrize("question", ["", "   "])
def test_an_empty_question_is_an_error_without_a_model_call(kb, chat_server, question) -> None:
    events = run(make_agent(kb, make_model(chat_server)), question)
    assert [(e.type, e.kind) for e in events] == [("error", "question")]
    assert chat_server.requests == []


def test_length_cut_is_noticed(kb, chat_server) -> None:
    chat_server.reply(Completion.say("A long answ", finish_reason="length"))
    events = run(make_agent(kb, make_model(chat_server)), "explain everything")
    assert [n.kind for n in of(events, NoticeEvent)] == ["length"] and events[-1].type == "done"


def test_a_query_longer_than_a_search_takes_is_searched_for_shortened(kb, chat_server) -> None:
    """A model that pastes a long text into its call gets results for its first 4,000 characters, and is told so,
    instead of a failed call and another round trip (#21 item 6)."""
    from rag_core.retrieval.retriever import MAX_QUERY_CHARS

    long_query = "disk full on node " * 300  # 5,400 characters
    chat_server.reply(Completion.calls(tool_call("search_knowledge_base", {"query": long_query})),
                      Completion.say("Done."))
    events = run(make_agent(kb, make_model(chat_server)), "Why is the disk full?")
    [result] = of(events, ToolResultEvent)
    assert result.ok and result.lookup is not None and len(result.lookup.query) <= MAX_QUERY_CHARS
    assert result.lookup.query == long_query[:4000]  # a whole last word ("... on node disk"), the limit is a space
    assert result.result["note"] == ("The query has 5,399 characters; the knowledge base was searched for its first "
                                     "4,000 (searches take at most 4,000).")
    assert tool_results(chat_server.requests[-1])[0]["note"] == result.result["note"]  # what the model read

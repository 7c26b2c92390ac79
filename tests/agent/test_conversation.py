"""The agent passes the conversation to its knowledge-base lookups: offline, a follow-up question is searched as the
standalone question it means, the tool's answer says what was searched, and the recorded turn keeps the rewrite."""

from __future__ import annotations

import json

from rag_core.agent import Agent, DoneEvent, Session, Toolbox, ToolCallEvent, ToolResultEvent, knowledge_base_tool
from rag_core.agent.kb_tool import TOOL_NAME
from rag_core.bootstrap import build_agent
from rag_core.feedback import TurnStore
from rag_core.feedback.records import Lookup
from tests.fakes.chat import ScriptedChatModel
from tests.servers.chat import Completion, tool_call

from .conftest import with_settings

FIRST, FOLLOW_UP = "How do I free disk space on a node?", "Which command shows it?"


def test_an_offline_follow_up_is_searched_rewritten_and_recorded_with_its_rewrite(kb, tmp_path) -> None:
    store = TurnStore(tmp_path / "turns.sqlite")
    agent = build_agent(with_settings(kb, {"chat.provider": "auto"}), env={}, record=False)
    agent.recorder = store.add
    session = Session()
    first = list(agent.run(FIRST, session))
    second = list(agent.run(FOLLOW_UP, session))

    results = [[e for e in events if isinstance(e, ToolResultEvent)] for events in (first, second)]
    assert [len(r) for r in results] == [1, 1]
    alone, follow = results[0][0].lookup, results[1][0].lookup
    assert alone is not None and follow is not None
    assert alone.rewrite is None and alone.to_dict()["rewrite"] is None  # no history: nothing to rewrite
    rewrite = follow.rewrite
    assert rewrite is not None and rewrite.outcome == "rewritten" and rewrite.by == "offline"
    assert rewrite.original == FOLLOW_UP and rewrite.searched.startswith(FOLLOW_UP) and rewrite.turns == 2
    assert "disk" in rewrite.searched.lower() and follow.query == FOLLOW_UP
    # the tool's call is the question as asked; its answer tells the model what was searched
    call = next(e for e in second if isinstance(e, ToolCallEvent))
    assert call.arguments == {"query": FOLLOW_UP}
    assert results[1][0].result["searched_as"] == rewrite.searched and "searched_as" not in results[0][0].result
    assert any(k.startswith("runbooks/disk_full.md#") for k in follow.evidence_keys)

    turns = [store.get(session_id=session.id, turn_index=i) for i in (0, 1)]
    assert [t.question for t in turns] == [FIRST, FOLLOW_UP]
    assert turns[0].lookups[0].rewrite is None and turns[0].to_dict()["lookups"][0]["rewrite"] is None
    assert turns[1].lookups[0].rewrite == rewrite.to_dict() and turns[1].lookups[0].searched == rewrite.searched
    assert isinstance(second[-1], DoneEvent) and tuple(second[-1].evidence_keys) == tuple(follow.evidence_keys)


def test_a_lookup_recorded_before_rewrites_reads_as_no_rewrite() -> None:
    old = {"query": "q", "params": {}, "evidence_keys": ["a#chunk-0"], "timings": {}, "candidates": []}
    lookup = Lookup.from_dict(json.loads(json.dumps(old)))
    assert lookup.rewrite is None and lookup.searched == "q" and lookup.to_dict()["rewrite"] is None


def test_with_a_model_its_tool_query_is_looked_up_with_the_history_and_it_is_told_what_was_searched(kb) -> None:
    model = ScriptedChatModel(
        Completion.calls(tool_call(TOOL_NAME, {"query": FIRST}, id="c1")),
        Completion.say("Run `df -h` to see which filesystem is full [runbooks/disk_full.md#chunk-6]."),
        Completion.calls(tool_call(TOOL_NAME, {"query": FOLLOW_UP}, id="c2")),
        Completion.say("`df -h` [runbooks/disk_full.md#chunk-6]."))
    agent = Agent(Toolbox([knowledge_base_tool(kb.retriever)]), model)  # the retriever has no model rewrite: offline
    session = Session()
    first = list(agent.run(FIRST, session))
    second = list(agent.run(FOLLOW_UP, session))
    (alone,) = [e.lookup for e in first if isinstance(e, ToolResultEvent)]
    (follow,) = [e.lookup for e in second if isinstance(e, ToolResultEvent)]
    assert alone is not None and alone.rewrite is None
    assert follow is not None and follow.rewrite is not None and follow.rewrite.turns == 2
    assert follow.rewrite.outcome == "rewritten" and "Disk Space Low" in follow.rewrite.searched  # the cited heading
    # the model's third call has the history; its fourth the tool's answer, with the question searched
    assert [m["role"] for m in model.requests[2]["messages"]] == ["system", "user", "assistant", "user"]
    tool_message = json.loads(model.requests[3]["messages"][-1]["content"])
    assert tool_message["query"] == FOLLOW_UP and tool_message["searched_as"] == follow.rewrite.searched


def test_with_a_model_rewrite_auto_asks_no_second_model_call_for_the_models_own_query(kb) -> None:
    from tests.fakes.rewriter import ScriptedRewriter

    scripted = ScriptedRewriter({FOLLOW_UP: "Which command shows the free disk space of a node?"})
    retriever = kb.retriever.with_rewriter(scripted)
    model = ScriptedChatModel(
        Completion.calls(tool_call(TOOL_NAME, {"query": FOLLOW_UP}, id="c1")), Completion.say("`df -h`."))
    session = Session()
    list(Agent(Toolbox([knowledge_base_tool(kb.retriever)]), None).run(FIRST, session))
    events = list(Agent(Toolbox([knowledge_base_tool(retriever)]), model).run(FOLLOW_UP, session))
    (lookup,) = [e.lookup for e in events if isinstance(e, ToolResultEvent)]
    assert lookup is not None and lookup.rewrite is not None and lookup.rewrite.by == "offline"
    assert scripted.asked == []  # the model wrote the query with the conversation in view
    offline = list(Agent(Toolbox([knowledge_base_tool(retriever)]), None).run(FOLLOW_UP, session))
    (asked,) = [e.lookup for e in offline if isinstance(e, ToolResultEvent)]
    # offline mode searches the question as asked: the retriever's model rewrite makes it standalone
    assert asked is not None and asked.rewrite is not None and asked.rewrite.by == "scripted"

"""The fold of one turn's events (shared by the chat page and the HTTP service)."""

from __future__ import annotations

from rag_core.agent import ContentEvent, DoneEvent, ErrorEvent, NoticeEvent, ToolCallEvent, ToolResultEvent
from rag_core.agent.turn import AssistantTurn, ToolStep


def test_a_turn_keeps_text_and_tool_steps_in_order() -> None:
    events = [
        ContentEvent("Let me look. ", 1), ContentEvent("Searching…", 1),
        ToolCallEvent("c1", "queryInternalDocs", {"query": "cpu"}, '{"query": "cpu"}', 1),
        NoticeEvent("retry", "retrying", 2),
        ToolResultEvent("c1", "queryInternalDocs", True, {"results": []}, 1, 0.25),
        ContentEvent("Answer [a.md#chunk-0]", 2),
        DoneEvent("…", ("a.md#chunk-0",), ("b.md#chunk-9",), ("a.md#chunk-0",), 2, "model"),
    ]
    turn = AssistantTurn.from_events(events)
    assert [type(p) for p in turn.parts] == [str, ToolStep, str]
    assert turn.parts[0] == "Let me look. Searching…"
    assert turn.text == "Let me look. Searching…Answer [a.md#chunk-0]"
    step = turn.tools()[0]
    assert (step.ok, step.seconds, step.query) == (True, 0.25, "cpu")
    assert turn.citations == ("a.md#chunk-0",) and turn.unverified == ("b.md#chunk-9",)
    assert turn.notices == ["retrying"] and turn.mode == "model" and turn.error is None


def test_a_result_without_its_call_still_makes_a_step_and_errors_are_kept() -> None:
    turn = AssistantTurn.from_events([
        ToolResultEvent("c9", "getCurrentDateTime", False, None, 1, 0.0, error="boom"),
        ErrorEvent("The chat model failed.", "server", 1),
    ])
    step = turn.tools()[0]
    assert (step.call_id, step.ok, step.error, step.arguments) == ("c9", False, "boom", None)
    assert turn.error == "The chat model failed." and turn.text == ""

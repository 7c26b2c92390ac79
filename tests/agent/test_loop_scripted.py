"""The agent loop's own rules, driven by the scripted fake chat model (no server, no knowledge base)."""

from __future__ import annotations

from rag_core.agent import Agent, ErrorEvent, Tool, Toolbox, ToolResultEvent
from rag_core.errors import ChatModelError
from tests.fakes.chat import ScriptedChatModel
from tests.servers.chat import Completion, tool_call


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def slow_tool(clock: Clock, seconds: float) -> Tool:
    def check_disk(host: str) -> dict:
        """Disk usage of a host.

        Args:
            host: The host name.
        """
        clock.now += seconds
        return {"host": host, "used": "91%"}

    return Tool.from_function(check_disk)


def test_the_turn_deadline_is_passed_to_the_model_and_checked_between_steps() -> None:
    clock = Clock()
    model = ScriptedChatModel(Completion.calls(tool_call("check_disk", {"host": "node-3"})), Completion.say("Full."),
                              clock=clock)
    agent = Agent(Toolbox([slow_tool(clock, 30)]), model, deadline=20, clock=clock)
    events = list(agent.run("Is node-3 full?"))
    assert model.requests[0]["until"] == 1020.0
    assert [e.type for e in events] == ["tool_call", "tool_result", "error"]
    error = events[-1]
    assert isinstance(error, ErrorEvent) and error.kind == "timeout" and error.step == 2
    assert error.message == ("This turn reached chat.deadline (20 s) before the model could answer; the tools took "
                             "the time. Ask a narrower question, or raise chat.deadline.")
    assert len(model.requests) == 1  # the second model call was not made


def test_an_empty_reply_after_a_tool_call_is_an_error() -> None:
    clock = Clock()
    model = ScriptedChatModel(Completion.calls(tool_call("check_disk", {"host": "a"})), Completion.say(""))
    events = list(Agent(Toolbox([slow_tool(clock, 0)]), model).run("disk?"))
    assert isinstance(events[1], ToolResultEvent) and events[-1].kind == "empty"
    assert events[-1].message.startswith("scripted model (tests) sent an empty answer (no text and no tool call")


def test_a_model_error_ends_the_turn_with_its_kind() -> None:
    model = ScriptedChatModel(ChatModelError("The chat model at http://x did not answer (connection refused).",
                                             "connection"))
    (error,) = list(Agent(Toolbox([]), model).run("hello"))
    assert (error.kind, error.step) == ("connection", 1)


def test_max_steps_with_a_model_that_only_calls_tools() -> None:
    clock = Clock()
    model = ScriptedChatModel(*[Completion.calls(tool_call("check_disk", {"host": f"n{i}"})) for i in range(3)])
    events = list(Agent(Toolbox([slow_tool(clock, 0)]), model, max_steps=2).run("check everything"))
    assert events[-1].type == "done" and events[-1].stop_reason == "max_steps"
    assert "reached the limit of 2 model calls" in events[-1].text

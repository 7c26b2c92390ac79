"""The `ChatModel` contract (rag_core/ports.py): what the agent loop relies on, whichever model.

Subclass `ChatModelContract` with fixtures `model` (the model under test), `script` (`script(*items)`
schedules its next answers, in the loopback chat servers' vocabulary: `Completion`, `tool_call`) and
`sent` (`sent()` -> the JSON-like requests the model made: {"messages", "tools", ...}).
"""

from __future__ import annotations

import json
import time

import pytest

from rag_core.errors import ChatModelError
from rag_core.ports import ChatModel
from rag_core.records import AssistantReply
from tests.servers.chat import Completion, tool_call

MESSAGES = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "What is P1?"}]
TOOLS = [{"type": "function", "function": {"name": "search_knowledge_base", "description": "Search.",
                                           "parameters": {"type": "object", "properties": {"query": {"type": "string"}},
                                                          "required": ["query"]}}}]


def drain(stream) -> tuple[list, AssistantReply]:
    """(what the stream yielded, the reply it returned)."""
    items = []
    while True:
        try:
            items.append(next(stream))
        except StopIteration as stop:
            return items, stop.value


class ChatModelContract:
    @pytest.fixture
    def model(self) -> ChatModel:
        raise NotImplementedError

    def test_is_a_chat_model_that_describes_itself(self, model) -> None:
        assert isinstance(model, ChatModel)
        assert model.describe() and "\n" not in model.describe()

    def test_streams_text_and_returns_the_whole_reply(self, model, script) -> None:
        script(Completion.say("A P1 is a major incident.", parts=3))
        pieces, reply = drain(model.stream(MESSAGES))
        assert [type(p) for p in pieces] == [str, str, str] and "".join(pieces) == "A P1 is a major incident."
        assert (reply.content, reply.tool_calls, reply.finish_reason) == ("A P1 is a major incident.", (), "stop")
        # Token counts when the server reports them (the loopback servers do, asked by stream_options), for traces.
        assert reply.usage in (None, {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})

    def test_sends_the_messages_and_the_tools(self, model, script, sent) -> None:
        script(Completion.say("ok"))
        drain(model.stream(MESSAGES, TOOLS))
        request = sent()[-1]
        assert request["messages"] == MESSAGES and request["tools"] == TOOLS

    def test_a_temperature_given_replaces_the_configured_one_for_that_call(self, model, script, sent) -> None:
        script(Completion.say("ok"), Completion.say("ok"))
        drain(model.stream(MESSAGES, temperature=0.0))
        drain(model.stream(MESSAGES))
        assert sent()[-2]["temperature"] == 0.0  # test-set generation and judging ask for 0
        assert sent()[-1]["temperature"] != 0.0  # the configured one (chat.temperature) otherwise

    def test_tool_calls_come_back_whole_and_in_order(self, model, script) -> None:
        script(Completion.calls(tool_call("search_knowledge_base", {"query": "P1 定义"}, parts=4),
                                tool_call("get_current_datetime", "{}")))
        pieces, reply = drain(model.stream(MESSAGES, TOOLS))
        assert pieces == [] and reply.finish_reason == "tool_calls"
        assert [c.name for c in reply.tool_calls] == ["search_knowledge_base", "get_current_datetime"]
        assert json.loads(reply.tool_calls[0].arguments) == {"query": "P1 定义"}
        assert all(c.id for c in reply.tool_calls) and len({c.id for c in reply.tool_calls}) == 2

    def test_an_error_after_some_text_ends_the_stream_with_a_chat_model_error(self, model, script) -> None:
        script(Completion.say("The first half", stream_error="The engine is overloaded."))
        stream = model.stream(MESSAGES)
        pieces = []
        with pytest.raises(ChatModelError) as info:
            pieces.extend(stream)
        assert "".join(pieces) == "The first half"
        assert info.value.kind == "server" and "during the answer: The engine is overloaded." in str(info.value)

    def test_a_turn_whose_deadline_has_passed_gets_no_answer(self, model, script) -> None:
        script(Completion.say("too late"))
        with pytest.raises(ChatModelError) as info:
            drain(model.stream(MESSAGES, until=time.monotonic() - 1))
        assert info.value.kind == "timeout" and "chat.deadline" in str(info.value)

    def test_a_consumer_may_stop_early(self, model, script) -> None:
        script(Completion.say("one two three four", parts=4))
        stream = model.stream(MESSAGES)
        assert next(stream)
        stream.close()  # the page was left: nothing raises, nothing is left open

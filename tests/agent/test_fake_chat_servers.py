"""The fake chat servers themselves, driven by the plain `openai` SDK: they must refuse what the real
services refuse, or the agent tests would pass on requests a real server rejects."""

from __future__ import annotations

import openai
import pytest

from tests.servers.chat import Completion, DashScopeChatServer, OpenAIChatServer, tool_call

CALL = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


def client(server: OpenAIChatServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key=server.api_key, max_retries=0, timeout=30)


def test_non_streamed_and_streamed_answers() -> None:
    with OpenAIChatServer() as server:
        server.reply(Completion.calls(tool_call("f", {"a": 1}, id="call_x"), text="hm"), Completion.say("abc", parts=3))
        first = client(server).chat.completions.create(model="test-chat", messages=[{"role": "user", "content": "q"}])
        assert first.choices[0].message.tool_calls[0].function.arguments == '{"a": 1}'
        assert first.choices[0].finish_reason == "tool_calls"
        pieces = [c.choices[0].delta.content for c in client(server).chat.completions.create(
            model="test-chat", messages=[{"role": "user", "content": "q"}], stream=True) if c.choices]
        assert "".join(p for p in pieces if p) == "abc"


@pytest.mark.parametrize("messages, fragment", [
    ([{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "call_1", "content": "{}"}],
     "must be a response to a preceeding message with 'tool_calls'"),
    ([{"role": "user", "content": "q"}, {"role": "assistant", "content": None, "tool_calls": [CALL]},
      {"role": "user", "content": "again"}], "did not have response messages: call_1"),
])
def test_tool_message_order_is_enforced(messages, fragment) -> None:
    with OpenAIChatServer() as server, pytest.raises(openai.BadRequestError, match=fragment):
        client(server).chat.completions.create(model="test-chat", messages=messages)


def test_dashscope_refuses_non_json_arguments_in_history() -> None:
    bad = {**CALL, "function": {"name": "f", "arguments": '{"a": '}}
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": None, "tool_calls": [bad]},
                {"role": "tool", "tool_call_id": "call_1", "content": "{}"}]
    with DashScopeChatServer() as server:
        with pytest.raises(openai.BadRequestError, match="must be in JSON format"):
            client(server).chat.completions.create(model="qwen-plus", messages=messages)
        assert server.requests[0].path == "/compatible-mode/v1/chat/completions"

"""build_agent: provider resolution from settings + environment, and a DashScope turn end to end."""

from __future__ import annotations

import json

import pytest

from rag_core.agent import ToolResultEvent
from rag_core.bootstrap import build_agent, build_chat_model, resolve_chat_provider
from rag_core.clients.openai_chat import DASHSCOPE_BASE_URL
from rag_core.errors import ConfigError
from tests.servers.chat import Completion, OpenAIChatServer, tool_call

from .conftest import KEY, with_settings


@pytest.mark.parametrize("overrides, env, expected", [
    ({}, {}, "offline"),
    ({}, {"DASHSCOPE_API_KEY": KEY}, "dashscope"),
    ({}, {"OPENAI_API_KEY": KEY}, "offline"),  # an OpenAI key alone does not say which server
    ({"chat.base-url": "http://127.0.0.1:9/v1"}, {"OPENAI_API_KEY": KEY}, "openai"),
    ({"chat.base-url": "http://127.0.0.1:9/v1", "chat.api-key-env": "MINE"}, {"MINE": KEY}, "openai"),
    ({"chat.provider": "offline"}, {"DASHSCOPE_API_KEY": KEY}, "offline"),
    ({"chat.provider": "openai"}, {}, "openai"),
])
def test_provider_resolution(kb, overrides, env, expected) -> None:
    assert resolve_chat_provider(with_settings(kb, overrides).settings, env) == expected


def test_dashscope_defaults(kb) -> None:
    model = build_chat_model(kb.settings, {"DASHSCOPE_API_KEY": KEY})
    assert (model.config.provider, model.config.base_url, model.config.model) == ("dashscope", DASHSCOPE_BASE_URL,
                                                                                  "qwen-plus")
    assert (model.config.temperature, model.config.max_tokens, model.config.timeout, model.config.max_retries) == (
        0.3, 1024, 60.0, 3)
    assert model.describe() == f"qwen-plus via DashScope ({DASHSCOPE_BASE_URL})"
    assert KEY not in repr(model) and KEY not in repr(model.config)


@pytest.mark.parametrize("overrides, env, message", [
    ({"chat.provider": "dashscope"}, {}, "chat.provider = dashscope needs an API key in $DASHSCOPE_API_KEY"),
    ({"chat.provider": "openai", "chat.base-url": "http://localhost:8000/v1"}, {}, "needs chat.model"),
    ({"chat.provider": "openai", "chat.model": "gpt-4o-mini"}, {}, "needs $OPENAI_API_KEY"),
    ({"chat.timezone": "Mars/Olympus"}, {}, "not a known time zone"),
])
def test_configuration_mistakes_are_clear(kb, overrides, env, message) -> None:
    with pytest.raises(ConfigError, match=message.replace("$", r"\$")):
        build_agent(with_settings(kb, overrides), env=env)


def test_a_dashscope_turn_end_to_end(kb, dashscope_server) -> None:
    wb = with_settings(kb, {"chat.base-url": dashscope_server.base_url, "chat.max-tokens": 512})
    agent = build_agent(wb, env={"DASHSCOPE_API_KEY": KEY})
    assert agent.mode == "model" and agent.model.config.model == "qwen-plus"

    def answer(request) -> Completion:
        results = json.loads(request.json["messages"][-1]["content"])["results"]
        return Completion.say(f"先确认是堆内还是堆外泄漏 [{results[0]['document_id']}]。")

    dashscope_server.reply(
        Completion.calls(tool_call("search_knowledge_base", {"query": "内存泄漏 排查步骤"}, parts=5)), answer)
    events = list(agent.run("订单服务内存一直涨，怎么排查？"))

    (result,) = [e for e in events if isinstance(e, ToolResultEvent)]
    done = events[-1]
    assert done.type == "done" and len(done.citations) == 1 and done.unverified_citations == ()
    assert done.citations[0] in result.evidence_keys and done.citations[0].startswith("runbooks/memory_leak_zh.md")
    first, second = dashscope_server.requests
    assert first.path == "/compatible-mode/v1/chat/completions"
    assert first.header("authorization") == f"Bearer {KEY}"
    assert first.json["model"] == "qwen-plus" and first.json["max_tokens"] == 512
    # DashScope restates "id": "" on later fragments; the call id sent back is the real one
    call_id = second.json["messages"][2]["tool_calls"][0]["id"]
    assert call_id.startswith("call_") and second.json["messages"][3]["tool_call_id"] == call_id
    assert json.loads(second.json["messages"][2]["tool_calls"][0]["function"]["arguments"]) == {
        "query": "内存泄漏 排查步骤"}


def test_a_keyless_local_server_gets_no_authorization_header(kb) -> None:
    with OpenAIChatServer(api_key=None, models=["qwen2.5:7b"]) as server:
        wb = with_settings(kb, {"chat.provider": "openai", "chat.base-url": server.base_url,
                                "chat.model": "qwen2.5:7b"})
        events = list(build_agent(wb, env={}).run("hello"))
        assert events[-1].text == "OK"
        assert server.requests[0].header("authorization") is None

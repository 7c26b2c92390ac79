"""Every chat model passes the `ChatModel` contract: the real `OpenAIChatModel` (openai SDK) against loopback
servers speaking OpenAI's and DashScope's compatible-mode protocols, and the scripted fake; the real one
also the remote-failure contract. Then the assembly of streamed tool-call fragments (fed with the SDK's own
chunk type)."""

from __future__ import annotations

import pytest
from openai.types.chat import ChatCompletionChunk

from rag_core.clients.openai_chat import ChatModelConfig, OpenAIChatModel, StreamAccumulator
from rag_core.errors import ChatModelError
from tests.contracts.chat_model import MESSAGES, ChatModelContract, drain
from tests.contracts.remote import GENEROUS, RemoteFailuresContract
from tests.fakes.chat import ScriptedChatModel
from tests.servers.chat import DashScopeChatServer, OpenAIChatServer

KEY = "sk-chat-SECRET-5f1e9a7c3b"


def chat_model(base_url: str, model: str, provider: str = "openai", **kw) -> OpenAIChatModel:
    config = {"timeout": GENEROUS, "max_retries": 0}
    config.update({k: kw.pop(k) for k in ("timeout", "max_retries") if k in kw})
    return OpenAIChatModel(ChatModelConfig(provider=provider, base_url=base_url, model=model,
                                           api_key_env="TEST_CHAT_KEY", **config), KEY, jitter=lambda: 0.0, **kw)


class ServerTests(ChatModelContract):
    """The real model against a loopback server (a subclass provides `server` and `model`)."""

    @pytest.fixture
    def script(self, server):
        return server.reply

    @pytest.fixture
    def sent(self, server):
        return server.chat_requests


class TestOpenAICompatible(ServerTests, RemoteFailuresContract):
    error = ChatModelError

    @pytest.fixture
    def server(self):
        yield from OpenAIChatServer(api_key=KEY).serve()

    @pytest.fixture
    def make(self, server):
        return lambda url=None, **kw: chat_model(f"{url or server.url}/v1", "test-chat", **kw)

    @pytest.fixture
    def model(self, make):
        return make()

    @pytest.fixture
    def call(self):
        return lambda model: drain(model.stream(MESSAGES))


class TestDashScopeCompatibleMode(ServerTests):
    @pytest.fixture
    def server(self):
        yield from DashScopeChatServer(api_key=KEY).serve()

    @pytest.fixture
    def model(self, server):
        return chat_model(server.base_url, "qwen-plus", provider="dashscope")


class TestScriptedFake(ChatModelContract):
    @pytest.fixture
    def model(self):
        return ScriptedChatModel()

    @pytest.fixture
    def script(self, model):
        return model.reply

    @pytest.fixture
    def sent(self, model):
        return lambda: model.requests


# ------------------------------------------------------------------------------------------------ streamed fragments
def chunk(*tool_calls: dict, content: str | None = None, finish: str | None = None) -> ChatCompletionChunk:
    delta: dict = {"content": content}
    if tool_calls:
        delta["tool_calls"] = list(tool_calls)
    return ChatCompletionChunk.model_validate({"id": "c", "object": "chat.completion.chunk", "created": 0,
                                               "model": "m", "choices": [{"index": 0, "delta": delta,
                                                                          "finish_reason": finish}]})


def assemble(*chunks: ChatCompletionChunk) -> list[tuple[str, str, str]]:
    acc = StreamAccumulator()
    for c in chunks:
        acc.feed(c)
    return [(c.id, c.name, c.arguments) for c in acc.reply().tool_calls]


def test_fragments_are_joined_by_index_with_dashscope_restatements() -> None:
    got = assemble(
        chunk({"index": 0, "id": "call_a", "type": "function", "function": {"name": "search", "arguments": '{"qu'}}),
        chunk({"index": 1, "id": "call_b", "type": "function", "function": {"name": "clock", "arguments": ""}}),
        chunk({"index": 0, "id": "", "type": "function", "function": {"name": None, "arguments": 'ery": "cp'}}),
        chunk({"index": 0, "id": "", "type": "function", "function": {"name": "search", "arguments": 'u"}'}}),
        chunk(finish="tool_calls"))
    assert got == [("call_a", "search", '{"query": "cpu"}'), ("call_b", "clock", "")]


def test_a_reused_index_with_a_new_id_is_a_new_call() -> None:  # sglang / lmdeploy
    got = assemble(
        chunk({"index": 0, "id": "0", "function": {"name": "f", "arguments": ""}}),
        chunk({"index": 0, "id": "0", "function": {"arguments": '{"a": 1}'}}),
        chunk({"index": 0, "id": "1", "function": {"name": "g", "arguments": ""}}),
        chunk({"index": 0, "id": "1", "function": {"arguments": '{"b": 2}'}}))
    assert got == [("0", "f", '{"a": 1}'), ("1", "g", '{"b": 2}')]


def test_missing_ids_get_stable_ones_and_text_is_collected() -> None:
    acc = StreamAccumulator()
    for c in (chunk(content="Hel"), chunk(content="lo"),
              chunk({"index": 0, "function": {"name": "f", "arguments": "{}"}}, finish="tool_calls")):
        acc.feed(c)
    reply = acc.reply(step=3)
    assert reply.content == "Hello" and reply.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [("call_3_0", "f", "{}")]

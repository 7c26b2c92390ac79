"""Every chat model passes the `ChatModel` contract: the real `ChatModel` (openai SDK) against loopback
servers speaking OpenAI's and DashScope's compatible-mode protocols, and the scripted fake; the real one
also the remote-failure contract."""

from __future__ import annotations

import pytest

from rag_core.agent import ChatModel, ChatModelConfig
from rag_core.agent.model import ChatModelError
from tests.contracts.chat_model import MESSAGES, ChatModelContract, drain
from tests.contracts.remote import RemoteFailuresContract
from tests.fakes.chat import ScriptedChatModel
from tests.servers.chat import DashScopeChatServer, OpenAIChatServer

from .conftest import KEY


def chat_model(base_url: str, model: str, provider: str = "openai", **kw) -> ChatModel:
    config = {"timeout": 5.0, "max_retries": 0}
    config.update({k: kw.pop(k) for k in ("timeout", "max_retries") if k in kw})
    return ChatModel(ChatModelConfig(provider=provider, base_url=base_url, model=model, api_key_env="TEST_CHAT_KEY",
                                     **config), KEY, jitter=lambda: 0.0, **kw)


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

"""Shared fixtures: one real knowledge base (Milvus Lite + the local embedder, the sample examples/kb
ingested once for the whole tests/agent run), fake chat servers, and an agent factory."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import pytest

from rag_core.agent import Agent, Toolbox, clock_tool, knowledge_base_tool
from rag_core.bootstrap import Workbench
from rag_core.clients.openai_chat import ChatModelConfig, OpenAIChatModel
from tests.contracts.remote import GENEROUS
from tests.helpers import SAMPLE_KB, make_workbench
from tests.servers.chat import DashScopeChatServer, OpenAIChatServer

KEY = "sk-chat-SECRET-5f1e9a7c3b"


@pytest.fixture(scope="session")
def kb(tmp_path_factory: pytest.TempPathFactory, local_embedder, milvus) -> Workbench:
    wb = make_workbench(tmp_path_factory.mktemp("agent-kb"), local_embedder)
    reports = wb.ingestor.ingest_paths([SAMPLE_KB])
    assert reports and all(r.status == "added" for r in reports), [r.error for r in reports if r.error]
    yield wb
    wb.close()


def with_settings(wb: Workbench, overrides: dict[str, Any]) -> Workbench:
    """The same knowledge base (store, retriever) with other settings, e.g. {"chat.max-steps": 2}."""
    return dataclasses.replace(wb, settings=wb.settings.with_overrides(overrides))


@pytest.fixture
def chat_server():
    yield from OpenAIChatServer(api_key=KEY).serve()


@pytest.fixture
def dashscope_server():
    yield from DashScopeChatServer(api_key=KEY).serve()


@pytest.fixture
def sleeps() -> list[float]:
    return []


def make_model(server: OpenAIChatServer, sleeps: list[float] | None = None, *, key: str | None = KEY,
               provider: str = "openai", model: str | None = None,
               clock: Callable[[], float] = time.monotonic, **config: Any) -> OpenAIChatModel:
    """`config`: ChatModelConfig's fields; chat.timeout is generous unless a test is about it."""
    config.setdefault("timeout", GENEROUS)
    cfg = ChatModelConfig(provider=provider, base_url=server.base_url, model=model or server.models[0],
                          api_key_env="TEST_CHAT_KEY", **config)
    return OpenAIChatModel(cfg, key, sleep=(sleeps.append if sleeps is not None else lambda s: None),
                           jitter=lambda: 0.0, clock=clock)


def warm_up(server: OpenAIChatServer) -> None:
    """One answer through the SDK before a test whose model has a short deadline, then a clean server: the SDK's
    first call in a process imports what it needs, which took seconds on a loaded machine."""
    from tests.servers.chat import Completion

    server.reply(Completion.say("ready"))
    list(make_model(server).stream([{"role": "user", "content": "hi"}]))
    server.reset()


def make_agent(wb: Workbench, model: OpenAIChatModel | None, *, max_steps: int = 6, history_pairs: int = 6,
               extra_tools: tuple = ()) -> Agent:
    tools = [knowledge_base_tool(wb.retriever), clock_tool("Asia/Shanghai"), *extra_tools]
    return Agent(Toolbox(tools), model, max_steps=max_steps, history_pairs=history_pairs)

"""One real knowledge base for the whole tests/service run (Milvus Lite + the local embedder, the sample
examples/kb ingested once), real uvicorn servers on loopback ports over it, and httpx clients."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

import httpx
import pytest

from rag_core.bootstrap import Workbench
from rag_core.service.app import create_app
from tests.helpers import indexed_workbench
from tests.service import live

CHAT_KEY = "sk-service-SECRET-9d2c41"


@pytest.fixture(scope="session")
def kb(tmp_path_factory: pytest.TempPathFactory, local_embedder, milvus) -> Iterator[Workbench]:
    wb = indexed_workbench(tmp_path_factory.mktemp("service-kb"), local_embedder)
    yield wb
    wb.close()


def with_settings(wb: Workbench, overrides: Mapping[str, Any]) -> Workbench:
    """The same knowledge base (store, retriever, ingestor) with other settings."""
    return dataclasses.replace(wb, settings=wb.settings.with_overrides(dict(overrides)))


def serve(wb: Workbench, *, token: str = "", env: Mapping[str, str] | None = None, **overrides: Any) -> live.LiveServer:
    """A live server over `wb` (not closed with the server: the session owns it). `overrides`: settings, with
    `_` for `-` and `__` for `.`, e.g. api__max_body_mb=0.01."""
    settings = {k.replace("__", ".").replace("_", "-"): v for k, v in overrides.items()}
    return live.start(create_app(with_settings(wb, settings) if settings else wb, token=token, env=env or {},
                                 close_workbench=False))


def model_settings(base_url: str) -> dict[str, Any]:
    """chat.timeout is longer than any test waits with the model's answers held (SlowOpenAIChatServer.hold)."""
    return {"chat__provider": "openai", "chat__base_url": base_url, "chat__model": "test-chat",
            "chat__max_retries": 0, "chat__timeout": 120}


@pytest.fixture(scope="session")
def offline_server(kb: Workbench) -> Iterator[live.LiveServer]:
    server = serve(kb)
    yield server
    server.stop()


@pytest.fixture
def client(offline_server: live.LiveServer) -> Iterator[httpx.Client]:
    yield from live.clients(offline_server)

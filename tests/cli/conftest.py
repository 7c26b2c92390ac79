"""Fixtures of the CLI tests that call a command function directly (`chat`): one real knowledge base (Milvus Lite,
the local embedder, the sample examples/kb ingested once) and a loopback OpenAI-compatible chat server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rag_core.bootstrap import Workbench
from tests.helpers import SAMPLE_KB, make_workbench
from tests.servers.chat import OpenAIChatServer

KEY = "sk-chat-SECRET-5f1e9a7c3b"


@pytest.fixture(scope="session")
def kb(tmp_path_factory: pytest.TempPathFactory, local_embedder, milvus) -> Iterator[Workbench]:
    wb = make_workbench(tmp_path_factory.mktemp("cli-kb"), local_embedder)
    reports = wb.ingestor.ingest_paths([SAMPLE_KB])
    assert reports and all(r.status == "added" for r in reports), [r.error for r in reports if r.error]
    yield wb
    wb.close()


@pytest.fixture
def chat_server() -> Iterator[OpenAIChatServer]:
    yield from OpenAIChatServer(api_key=KEY).serve()

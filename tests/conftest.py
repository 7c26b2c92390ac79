"""Fixtures shared by every test package. Keep this small: packages add their own conftest.py."""

from __future__ import annotations

import os
from typing import Iterator

import pytest

from rag_core.embedding.local import LocalUSEEmbedder

# Milvus Lite: each test's throw-away database is opened by the test process itself (exclusive mode),
# including CLI subprocesses, which inherit this; no store host is started per temporary database.
# Settings built with `env={}` still get the users' default (shared, through a store host): the tests of
# that mode ask for it, and the hosts this session started are stopped at its end.
os.environ.setdefault("RAG_MILVUS_LITE_MODE", "exclusive")
# A subprocess that does go through a store host (`--set milvus.lite-mode=shared`) leaves none running: its host
# stops when its last client leaves (tests that need a host to outlive a command set milvus.host-idle).
os.environ.setdefault("RAG_MILVUS_HOST_IDLE", "0")


@pytest.fixture(scope="session", autouse=True)
def _stop_store_hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    yield
    from rag_core.store.lite.host_client import stop_all_under, stop_started

    stop_started()
    stop_all_under(tmp_path_factory.getbasetemp())  # also those started by the tests' subprocesses


@pytest.fixture(scope="session")
def local_embedder() -> LocalUSEEmbedder:
    """The real bundled embedder, loaded once per test session (~0.7 s)."""
    return LocalUSEEmbedder()

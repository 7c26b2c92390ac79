"""AppTest fixtures: every test here runs with an isolated data dir and no chat keys.

The app's workbench is `st.cache_resource`d per data dir and shared by every AppTest in this process,
so the seeded knowledge base is built once; tests that change the knowledge base get a fresh one
(`fresh_kb`), and every cached workbench is closed at the end (releasing the Milvus Lite locks).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag_core.bootstrap import Workbench
from ui.state import clear_workbench, get_workbench

REPO = Path(__file__).resolve().parents[2]
SEED = ["examples/kb/runbooks/cpu_high.md", "examples/kb/runbooks/disk_full.md", "examples/kb/product/order_service.md"]
CLEAR_ENV = ("DASHSCOPE_API_KEY", "OPENAI_API_KEY", "MILVUS_URI", "MILVUS_TOKEN")


@pytest.fixture(scope="session")
def seeded_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("ui-kb")
    yield path
    clear_workbench()


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch: pytest.MonkeyPatch, seeded_dir: Path) -> None:
    for var in [*CLEAR_ENV, *(k for k in os.environ if k.startswith("RAG_"))]:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("RAG_DATA_DIR", str(seeded_dir))
    monkeypatch.chdir(REPO)  # no stray rag.toml from elsewhere


@pytest.fixture
def kb(milvus) -> Workbench:
    """The shared knowledge base with three sample documents (indexed on first use)."""
    wb = get_workbench()
    if not wb.store.list_documents():
        reports = wb.ingestor.ingest_paths([REPO / f for f in SEED], prefix="")
        assert [r.status for r in reports] == ["added"] * len(SEED), reports
    return wb


@pytest.fixture
def fresh_kb(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, milvus) -> Iterator[Workbench]:
    """An empty knowledge base of this test's own; closed afterwards."""
    monkeypatch.setenv("RAG_DATA_DIR", str(tmp_path / "data"))
    yield get_workbench()
    clear_workbench()

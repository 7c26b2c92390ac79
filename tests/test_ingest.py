"""Ingest end to end on Milvus Lite: statuses, bad input that loses nothing, progress, re-index."""

from __future__ import annotations

import codecs
import json
import threading
from pathlib import Path

import pytest

from rag_core.bootstrap import knowledge_bases, open_source_store
from rag_core.errors import StoreError
from tests.helpers import SAMPLE_KB, make_workbench

GOOD = "# 运维手册\n\n当 CPU 使用率超过 85% 时，先检查最近的发布。\n\n## Steps\n\nRun top and check the pods.\n"


@pytest.fixture
def wb(tmp_path: Path, local_embedder, milvus):
    workbench = make_workbench(tmp_path / "data", embedder=local_embedder, **{"loader.max-file-mb": 0.01})
    yield workbench
    workbench.close()


@pytest.mark.parametrize(
    ("name", "data", "fragment", "code"),
    [
        ("empty.md", b"", "empty", "empty"),
        ("blank.md", b"  \n\n\t ", "only whitespace", "empty"),
        ("binary.md", b"\x7fELF\x02\x01\x01" + bytes(200), "binary", "binary"),
        ("big.md", b"# big\n\n" + b"word " * 4000, "loader.max-file-mb", "too_large"),
        ("tool.exe", b"MZ", "unsupported file type", "unsupported"),
        ("../escape.md", b"# x\n\ntext", "..", "bad_name"),
    ],
)
def test_bad_input_is_refused_and_the_previous_version_survives(wb, name: str, data: bytes, fragment: str,
                                                                code: str) -> None:
    target = "escape.md" if name.startswith("..") else name
    first = wb.ingestor.ingest_uploads([(target if target.endswith(".md") else "tool.md", GOOD.encode())])[0]
    assert first.status == "added" and first.error_code == ""
    before = wb.store.list_documents()
    [report] = wb.ingestor.ingest_uploads([(name, data)])
    assert report.status == "failed" and fragment in report.error, report
    assert report.error_code == code  # the refusal's code, for programs (the HTTP API's status)
    assert wb.store.list_documents() == before  # nothing lost, nothing half-written


@pytest.mark.parametrize(
    ("encoding", "data"),
    [
        ("utf-8-sig", codecs.BOM_UTF8 + GOOD.encode()),
        ("utf-16", GOOD.encode("utf-16")),
        ("gb18030", GOOD.encode("gbk")),
        ("crlf", GOOD.replace("\n", "\r\n").encode()),
    ],
)
def test_encodings_index_the_same_text(wb, encoding: str, data: bytes) -> None:
    wb.ingestor.ingest_uploads([("a.md", GOOD.encode())])
    [report] = wb.ingestor.ingest_uploads([("a.md", data)])
    assert report.status == "unchanged", (encoding, report)  # same decoded text, same content hash
    assert "\r" not in "".join(c.content for c in wb.store.get_chunks("a.md"))


def test_odd_names_and_prefix(wb) -> None:
    names = ['say "hi".md', "it's.md", "中文 文档.md", "back\\slash.md"]
    reports = wb.ingestor.ingest_uploads([(n, GOOD.encode()) for n in names], prefix="runbooks")
    assert [r.status for r in reports] == ["added"] * 4, reports
    assert [r.doc_id for r in reports] == ['runbooks/say "hi".md', "runbooks/it's.md", "runbooks/中文 文档.md",
                                           "runbooks/back/slash.md"]


@pytest.mark.milvus
def test_upload_and_folder_ingest_give_the_same_doc_id(tmp_path: Path, local_embedder) -> None:
    wb = make_workbench(tmp_path / "d", embedder=local_embedder)
    try:
        folder = wb.ingestor.ingest_paths([SAMPLE_KB / "runbooks"], prefix="runbooks")
        upload = wb.ingestor.ingest_uploads([("cpu_high.md", (SAMPLE_KB / "runbooks" / "cpu_high.md").read_bytes())],
                                            prefix="runbooks")
        assert "runbooks/cpu_high.md" in {r.doc_id for r in folder}
        assert upload[0].doc_id == "runbooks/cpu_high.md" and upload[0].status == "unchanged"
    finally:
        wb.close()


def test_progress_is_reported_per_file_and_overall(wb) -> None:
    events = []
    wb.ingestor.ingest_uploads([("a.md", GOOD.encode()), ("b.md", b""), ("c.md", (GOOD * 20).encode()[:9000])],
                               progress=events.append)
    stages = [(e.file_index, e.stage) for e in events]
    assert stages[0] == (0, "loading") and (1, "failed") in stages and stages[-1] == (2, "done")
    fractions = [e.fraction for e in events]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert any(e.stage == "embedding" and e.total > 1 for e in events)


@pytest.mark.milvus
def test_changed_chunk_settings_replace_and_reindex_uses_kept_originals(tmp_path: Path, local_embedder) -> None:
    data = tmp_path / "d"
    wb = make_workbench(data, embedder=local_embedder)
    wb.ingestor.ingest_paths([SAMPLE_KB / "runbooks" / "cpu_high.md"])
    chunks_800 = wb.store.list_documents()[0].chunks
    wb.close()
    with knowledge_bases(wb.settings) as kbs:  # chunking is the knowledge base's: change it there
        kbs.update("biz", {"chunk.max-size": 400, "chunk.overlap": 40})
    wb = make_workbench(data, embedder=local_embedder)
    try:
        [report] = wb.ingestor.reindex()
        assert report.status == "replaced" and report.doc_id == "cpu_high.md"
        assert wb.store.list_documents()[0].chunks > chunks_800
        assert wb.ingestor.original("cpu_high.md") == (SAMPLE_KB / "runbooks" / "cpu_high.md").read_bytes()
        assert wb.ingestor.delete("cpu_high.md") and wb.ingestor.original("cpu_high.md") is None
    finally:
        wb.close()


@pytest.mark.milvus
def test_reindex_into_a_new_collection_for_a_new_embedder(tmp_path: Path, local_embedder) -> None:
    data = tmp_path / "d"
    wb = make_workbench(data, embedder=local_embedder)
    wb.ingestor.ingest_paths([SAMPLE_KB / "policies"])
    wb.close()
    wb = make_workbench(data, embedder=local_embedder, **{"milvus.collection": "biz_v2"})
    source = open_source_store(wb.settings, "biz")
    try:
        reports = wb.ingestor.reindex(source=source)
        assert {r.status for r in reports} == {"added"} and len(reports) == 3
        assert [d.doc_id for d in wb.store.list_documents()] == [
            "incident_response.md", "oncall_zh.md", "release_zh.md"]
        assert all(d.has_original for d in wb.store.list_documents())  # the copy keeps its own originals
        with pytest.raises(StoreError, match="no knowledge base collection 'nope'"):
            open_source_store(wb.settings, "nope")
    finally:
        source.close()
        wb.close()


def test_small_documents_are_written_in_groups_and_a_bad_one_fails_alone(wb, monkeypatch) -> None:
    from rag_core.errors import EmbeddingError
    from rag_core.store import MilvusStore

    real_embed = wb.embedder.embed_documents

    def picky_embed(texts):
        if any("POISON" in t for t in texts):
            raise EmbeddingError("The embedding service rejected an input (HTTP 400).")
        return real_embed(texts)

    monkeypatch.setattr(wb.embedder, "embed_documents", picky_embed)
    writes = []
    real_replace = MilvusStore.replace_documents
    monkeypatch.setattr(MilvusStore, "replace_documents",
                        lambda self, items: writes.append(len(items)) or real_replace(self, items))
    uploads = [(f"doc{i}.md", f"# Doc {i}\n\nShort text number {i}.\n".encode()) for i in range(6)]
    assert {r.status for r in wb.ingestor.ingest_uploads(uploads)} == {"added"}
    assert writes == [6]  # one write for the whole group
    uploads = [(name, data + b"\nmore") for name, data in uploads]
    uploads.insert(3, ("bad.md", b"# Bad\n\nPOISON in here.\n"))
    events = []
    reports = wb.ingestor.ingest_uploads(uploads, progress=events.append)
    assert [r.status for r in reports] == ["replaced"] * 3 + ["failed"] + ["replaced"] * 3
    assert "HTTP 400" in reports[3].error
    assert len({d.doc_id for d in wb.store.list_documents()}) == 6
    fractions = [e.fraction for e in events]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0


def test_the_same_doc_id_twice_in_one_run(wb) -> None:
    reports = wb.ingestor.ingest_uploads([("a.md", b"# A\n\nfirst"), ("a.md", b"# A\n\nsecond")])
    assert [r.status for r in reports] == ["added", "replaced"]
    assert "second" in wb.store.get_chunks("a.md")[0].content


class Rendezvous:
    """The real embedder, except that the first caller waits (up to 2 s) for a second one. Without the
    Ingestor's per-document lock, two sessions ingesting one document both get here before either commits."""

    def __init__(self, inner) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.calls, self.guard, self.second = 0, threading.Lock(), threading.Event()

    def embed_documents(self, texts):
        with self.guard:
            self.calls += 1
            first = self.calls == 1
        if first:
            self.second.wait(timeout=2)
        else:
            self.second.set()
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)


def test_two_sessions_ingesting_one_document_do_not_both_commit(wb) -> None:
    wb.ingestor.embedder = Rendezvous(wb.embedder)  # Streamlit sessions share this one workbench
    statuses: list[str] = []

    def session() -> None:
        statuses.extend(r.status for r in wb.ingestor.ingest_uploads([("shared.md", GOOD.encode())]))

    threads = [threading.Thread(target=session) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(statuses) == ["added", "unchanged"]  # the second waited, then found it indexed
    assert wb.ingestor.embedder.calls == 1
    assert wb.store.recover() == 0  # no second commit left a superseded version behind
    assert len(wb.store.list_documents()) == 1


@pytest.mark.milvus
def test_cli_ingest_json_carries_error_codes_and_the_prefix_is_normalised(tmp_path: Path, capsys) -> None:
    from rag_core.cli import main

    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "a.md").write_text(GOOD, encoding="utf-8")
    (folder / "empty.md").write_bytes(b"")
    code = main(["--data-dir", str(tmp_path / "d"), "ingest", str(folder), "--prefix", ".\\runbooks/", "--json",
                 "--quiet"])
    reports = {Path(r["path"]).name: r for r in json.loads(capsys.readouterr().out)}
    assert code == 1  # a file failed
    assert (reports["a.md"]["doc_id"], reports["a.md"]["status"], reports["a.md"]["error_code"]) == (
        "runbooks/a.md", "added", "")
    assert (reports["empty.md"]["status"], reports["empty.md"]["error_code"]) == ("failed", "empty")


def test_the_ingestor_on_the_in_memory_store() -> None:
    """The Ingestor needs only the ChunkStore port: the in-memory fake runs it in milliseconds."""
    import hashlib

    from rag_core.ingest import Ingestor
    from rag_core.records import Document
    from rag_core.store.memory import InMemoryChunkStore
    from tests.fakes.embedder import FakeEmbedder

    embedder, store = FakeEmbedder(), InMemoryChunkStore()
    store.open(embedder.name, embedder.dim)
    ingestor = Ingestor(store, embedder)
    assert [r.status for r in ingestor.ingest_uploads([("a.md", GOOD.encode())], prefix="./kb")] == ["added"]
    assert [r.status for r in ingestor.ingest_uploads([("kb/a.md", GOOD.encode())])] == ["unchanged"]
    text = "# From text\n\nNo file behind this one.\n"
    doc = Document("kb/text.md", text, "text.md", "md", len(text), hashlib.sha256(text.encode()).hexdigest())
    assert [r.status for r in ingestor.ingest_documents([doc])] == ["added"]
    assert ingestor.original("kb/a.md") == GOOD.encode() and ingestor.original("kb/text.md") is None
    reports = ingestor.reindex()
    assert [(r.doc_id, r.status, r.error_code) for r in reports] == [
        ("kb/a.md", "replaced", ""), ("kb/text.md", "failed", "no_original")]
    reports = ingestor.reindex(["./kb/a.md", "kb\\a.md", "nope.md"])
    assert [(r.doc_id or r.path, r.status, r.error_code) for r in reports] == [
        ("kb/a.md", "replaced", ""), ("kb/a.md", "replaced", ""), ("nope.md", "failed", "not_found")]
    assert ingestor.delete("./kb/a.md") and store.read_original("kb/a.md") is None
    assert [d.doc_id for d in store.list_documents()] == ["kb/text.md"]

"""`rebuild --from`: a knowledge base whose database is lost or damaged is re-indexed from its kept
originals (#10 item 7): the whole story from the damage message to the same chunks back, the choices
it makes and says, every file it cannot restore reported, and bad input refused in one line."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rag_core.cli import main
from rag_core.store.lite.host_client import stop
from rag_core.store.originals.files import KeptVersion, OriginalFiles
from tests.helpers import REPO, make_workbench
from tests.store.milvus.test_store import doc_bytes

DOCS = {
    "runbooks/alpha.md": doc_bytes("alpha first", 3),
    "beta.md": doc_bytes("beta", 2),
    "中文/说明.md": "# 说明\n\n磁盘空间不足时，先清理日志文件，再扩容。\n\n## 检查\n\n查看 df -h 的输出。\n".encode(),
    "notes.txt": b"Plain text notes about the release train.\n\nSecond paragraph of the notes.\n",
}
ALPHA_V2 = doc_bytes("alpha second", 4)


def chunks_of(store: Any, doc_id: str) -> list[tuple]:
    return [(c.chunk_index, c.content, c.title, c.metadata["start"], c.metadata["end"], c.metadata["headingPath"],
             c.metadata["chunkHash"], c.metadata["_file_name"], c.metadata["_extension"])
            for c in store.get_chunks(doc_id)]


def snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.milvus
def test_the_whole_story_from_the_damage_message_to_the_same_chunks(tmp_path: Path, local_embedder, capsys) -> None:
    data = tmp_path / "data"
    wb = make_workbench(data, embedder=local_embedder)
    try:
        assert {r.status for r in wb.ingestor.ingest_uploads(DOCS.items())} == {"added"}
        [again] = wb.ingestor.ingest_uploads([("runbooks/alpha.md", ALPHA_V2)])  # two versions existed
        assert again.status == "replaced"
        listed = {d.doc_id: (d.file_name, d.extension, d.size_bytes, d.content_hash, d.chunks)
                  for d in wb.store.list_documents()}
        before = {doc_id: chunks_of(wb.store, doc_id) for doc_id in listed}
    finally:
        wb.close()
    db = data / "milvus.db"
    content = db.read_bytes()
    db.write_bytes(content[: len(content) // 2])
    damaged = snapshot(data)

    assert main(["--data-dir", str(data), "docs"]) == 2
    err = capsys.readouterr().err
    assert "is damaged" in err and err.count("\n") == 1
    command = re.search(r"`([^`]*)`", err)[1]
    rebuilt = tmp_path / "data-rebuilt"
    assert command == f"python -m rag_core --data-dir {rebuilt} rebuild --from {data} --collection biz"

    # The command exactly as the message names it, in a process of its own, as a person would run it (in
    # the users' default mode: through a store host).
    argv = shlex.split(command)
    out = subprocess.run([sys.executable, *argv[1:]], cwd=REPO, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(REPO), "RAG_MILVUS_LITE_MODE": "shared"})
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert sorted(line.split()[1] for line in lines[:-1]) == sorted(listed)
    assert all(line.startswith("added ") for line in lines[:-1])
    assert lines[-1] == f"4 restored, 0 could not be restored (kept originals read from {data / 'originals' / 'biz'})"
    assert "[4/4]" in out.stderr and "Traceback" not in out.stderr  # the progress bar
    assert snapshot(data) == damaged  # the damaged data dir is left exactly as it was

    wb = make_workbench(rebuilt, embedder=local_embedder, **{"milvus.lite-mode": "shared"})
    try:
        assert {d.doc_id: (d.file_name, d.extension, d.size_bytes, d.content_hash, d.chunks)
                for d in wb.store.list_documents()} == listed
        assert {doc_id: chunks_of(wb.store, doc_id) for doc_id in listed} == before
        assert wb.ingestor.original("runbooks/alpha.md") == ALPHA_V2  # the newest version, not the first
        assert all(d.has_original for d in wb.store.list_documents())  # kept again: it can be rebuilt again
        [top, *_] = wb.retriever.lookup("alpha second", return_n=3).evidence
        assert top.doc_id == "runbooks/alpha.md"
    finally:
        wb.close()
        stop(rebuilt / "milvus.db")


def kept(doc_id: str, version: str, written_ns: int, state: str = "committed", **fields: Any) -> KeptVersion:
    return KeptVersion(doc_id=doc_id, version=version, file_name=doc_id.rsplit("/", 1)[-1],
                       extension=doc_id.rsplit(".", 1)[-1], size_bytes=0, content_hash="", fingerprint="",
                       ingested_at=f"2026-01-0{written_ns}T00:00:00+00:00", written_ns=written_ns, state=state,
                       **fields)


@pytest.fixture(scope="module")
def crafted(tmp_path_factory, milvus) -> Path:
    """The kept originals of a lost database in every state a kill or a damage can leave them in."""
    data = tmp_path_factory.mktemp("lost") / "data"
    files = OriginalFiles(data / "originals" / "biz")
    files.write("000000000000000a", doc_bytes("kept one"), kept("kept.md", "", 1))
    files.write("000000000000000b", doc_bytes("kept two, never committed"), kept("kept.md", "", 2, "pending"))
    files.write("000000000000000c", doc_bytes("only pending"), kept("pending.md", "", 3, "pending"))
    files.write("000000000000000d", doc_bytes("tampered"), kept("tampered.md", "", 1))
    files.path("000000000000000d").write_bytes(doc_bytes("tampered with"))
    files.write("000000000000000e", doc_bytes("lost bytes"), kept("lost.md", "", 1))
    files.path("000000000000000e").unlink()
    files.write("000000000000000f", doc_bytes("unnamed"))  # kept by a release before sidecars
    files.write("0000000000000010", doc_bytes("bad sidecar"), kept("bad.md", "", 1))
    files.sidecar("0000000000000010", "committed").write_text("{not json")
    files.write("0000000000000011", doc_bytes("being deleted"), kept("deleted.md", "", 1, "retired"))
    files.write("0000000000000012", b"text\x00with\x00nul\x00bytes" * 20, kept("binary.md", "", 1))
    files.write("0000000000000013", doc_bytes("half written"), kept("half.md", "", 4, "pending"))
    files.path("0000000000000013").unlink()  # killed between the sidecar and the original
    files.write("0000000000000014", doc_bytes("small chunks"),
                kept("small.md", "", 1, indexed_with={"chunk.max-size": 300, "chunk.overlap": 30,
                                                       "embedder": "local:use-multilingual-v3", "chunker": "1"}))
    files.write("0000000000000015", doc_bytes("escape"), kept("../escape.md", "", 1))
    return data


def test_every_kept_file_is_restored_or_reported_with_the_reason(crafted: Path, tmp_path: Path, capsys) -> None:
    before = snapshot(crafted)
    assert main(["--data-dir", str(tmp_path / "new"), "rebuild", "--from", str(crafted), "--json", "--quiet"]) == 1
    result = json.loads(capsys.readouterr().out)
    reports = {r["doc_id"] or Path(r["path"]).name: r for r in result["reports"]}
    assert {name: (r["status"], r["error_code"]) for name, r in reports.items()} == {
        "kept.md": ("added", ""), "pending.md": ("added", ""), "small.md": ("added", ""),
        "tampered.md": ("failed", "damaged_original"), "lost.md": ("failed", "no_original"),
        "binary.md": ("failed", "binary"), "000000000000000f": ("failed", "unnamed"),
        "0000000000000010.json": ("failed", "bad_sidecar"), "0000000000000015.json": ("failed", "bad_sidecar"),
    }  # deleted.md (retired) and half.md (no original): never restored
    assert "is damaged" in reports["tampered.md"]["error"] and "ingest it again" in reports["tampered.md"]["error"]
    assert "is missing" in reports["lost.md"]["error"]
    assert "without a sidecar" in reports["000000000000000f"]["error"]
    assert "damaged sidecar (not JSON" in reports["0000000000000010.json"]["error"]
    assert "'..' is not allowed" in reports["0000000000000015.json"]["error"]
    notes = "\n".join(result["notes"])
    assert "kept.md: restored the last committed version (version 000000000000000a" in notes
    assert "pending.md: its only kept version" in notes and "restored anyway" in notes
    assert "1 document(s) were indexed with chunk.max-size = 300; this data dir uses 800" in notes
    assert snapshot(crafted) == before  # read only

    wb = make_workbench(tmp_path / "new")
    try:
        assert wb.ingestor.original("kept.md") == doc_bytes("kept one")
        assert [d.doc_id for d in wb.store.list_documents()] == ["kept.md", "pending.md", "small.md"]
    finally:
        wb.close()

    # The same notes and failures for people, and the exit code.
    assert main(["--data-dir", str(tmp_path / "other"), "rebuild", "--from", str(crafted / "originals"),
                 "--quiet"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-1].startswith("3 restored, 6 could not be restored")
    assert any(line.startswith("note: kept.md: restored the last committed version") for line in out)
    assert any(line.startswith("failed    tampered.md  tampered.md: its kept original") for line in out)


@pytest.mark.parametrize("case", ["missing", "a file", "empty", "other collection", "bad collection",
                                  "nothing restorable"])
def test_bad_sources_are_refused_in_one_line(tmp_path: Path, case: str, capsys) -> None:
    source = tmp_path / "source"
    extra: list[str] = []
    if case == "a file":
        source.write_text("not a folder")
    elif case == "empty":
        source.mkdir()
    elif case == "other collection":
        OriginalFiles(source / "originals" / "team_a").write("00000000000000aa", b"# A\n", kept("a.md", "", 1))
    elif case == "bad collection":
        source.mkdir()
        extra = ["--collection", "../x"]
    elif case == "nothing restorable":
        files = OriginalFiles(source / "originals" / "biz")
        files.write("00000000000000aa", b"# A\n", kept("a.md", "", 1, "retired"))
    assert main(["--data-dir", str(tmp_path / "new"), "rebuild", "--from", str(source), *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    expected = {"missing": "no such folder", "a file": "is a file; give the data dir",
                "empty": "No kept originals of collection 'biz' in", "other collection": "(pass --collection)",
                "bad collection": "is not a valid knowledge base name",
                "nothing restorable": "holds no kept original that could be restored"}[case]
    assert expected in err
    if case == "other collection":
        assert "other collections are there: team_a" in err
    assert not (tmp_path / "new" / "milvus.db").exists()  # refused before the target was opened


@pytest.mark.milvus
def test_a_knowledge_base_with_documents_is_refused_unless_forced(tmp_path: Path, local_embedder, capsys) -> None:
    source = tmp_path / "lost"
    OriginalFiles(source / "originals" / "biz").write("00000000000000aa", doc_bytes("restored"),
                                                        kept("shared.md", "", 1))
    target = tmp_path / "target"
    wb = make_workbench(target, embedder=local_embedder)
    try:
        wb.ingestor.ingest_uploads([("shared.md", doc_bytes("current")), ("mine.md", doc_bytes("mine"))])
    finally:
        wb.close()
    assert main(["--data-dir", str(target), "rebuild", "--from", str(source), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "already has 2 documents" in err and "--force" in err and err.count("\n") == 1
    assert main(["--data-dir", str(target), "rebuild", "--from", str(source), "--quiet", "--force"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("replaced  shared.md")
    wb = make_workbench(target, embedder=local_embedder)
    try:
        assert wb.ingestor.original("shared.md") == doc_bytes("restored")
        assert wb.ingestor.original("mine.md") == doc_bytes("mine")  # the others stay
    finally:
        wb.close()


@pytest.mark.milvus
def test_a_data_dir_of_the_older_layout(tmp_path: Path, local_embedder, capsys) -> None:
    """Originals named by doc_id (`uploads/<collection>/<doc_id>`): the same command restores them; in a
    data dir a release with sidecars opened, the files it left there are not the indexed text: reported."""
    old = tmp_path / "old"
    for doc_id, data in DOCS.items():
        (old / "uploads" / "biz" / doc_id).parent.mkdir(parents=True, exist_ok=True)
        (old / "uploads" / "biz" / doc_id).write_bytes(data)
    assert main(["--data-dir", str(tmp_path / "new"), "rebuild", "--from", str(old), "--json", "--quiet"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["layout"] == "uploads" and result["source"] == str(old / "uploads" / "biz")
    assert sorted((r["doc_id"], r["status"]) for r in result["reports"]) == sorted((d, "added") for d in DOCS)

    OriginalFiles(old / "originals" / "biz").write("00000000000000aa", doc_bytes("adopted"), kept("a.md", "", 1))
    assert main(["--data-dir", str(tmp_path / "new2"), "rebuild", "--from", str(old), "--json", "--quiet"]) == 1
    reports = json.loads(capsys.readouterr().out)["reports"]
    assert {(r["doc_id"], r["status"], r["error_code"]) for r in reports} == {("a.md", "added", "")} | {
        (d, "failed", "not_adopted") for d in DOCS}

    # In place (its database moved aside): the files of the older layout become versions with sidecars.
    inplace = tmp_path / "inplace"
    for doc_id, data in DOCS.items():
        (inplace / "uploads" / "biz" / doc_id).parent.mkdir(parents=True, exist_ok=True)
        (inplace / "uploads" / "biz" / doc_id).write_bytes(data)
    assert main(["--data-dir", str(inplace), "rebuild", "--from", str(inplace), "--quiet"]) == 0
    capsys.readouterr()
    assert not (inplace / "uploads" / "biz").exists()
    assert len(list((inplace / "originals" / "biz").glob("*.json"))) == len(DOCS)


@pytest.mark.milvus
def test_rebuilding_into_the_data_dir_whose_database_was_moved_aside(tmp_path: Path, local_embedder,
                                                                     capsys) -> None:
    """Move the damaged milvus.db aside and rebuild in place: opening the data dir with a new database keeps
    the kept originals (they are committed versions it does not have), and the rebuild then replaces them
    with its own versions."""
    data = tmp_path / "data"
    wb = make_workbench(data, embedder=local_embedder)
    try:
        wb.ingestor.ingest_uploads(list(DOCS.items())[:2])
    finally:
        wb.close()
    old_versions = {p.name for p in (data / "originals" / "biz").iterdir()}
    (data / "milvus.db").rename(tmp_path / "milvus.db.damaged")

    assert main(["--data-dir", str(data), "docs"]) == 0  # a new, empty database
    assert "0 documents" in capsys.readouterr().out
    assert {p.name for p in (data / "originals" / "biz").iterdir()} == old_versions  # nothing removed

    assert main(["--data-dir", str(data), "rebuild", "--from", str(data), "--quiet"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("2 restored, 0 could not be restored")
    wb = make_workbench(data, embedder=local_embedder)
    try:
        docs = wb.store.list_documents()
        assert sorted(d.doc_id for d in docs) == sorted(list(DOCS)[:2])
        names = {p.name for p in (data / "originals" / "biz").iterdir()}
        assert names == {d.version for d in docs} | {f"{d.version}.json" for d in docs}  # the old ones went
    finally:
        wb.close()
    assert main(["--data-dir", str(data), "rebuild", "--from", str(data), "--quiet", "--force"]) == 2
    assert "holds no kept original that could be restored" in capsys.readouterr().err  # its own are not lost


@pytest.mark.milvus
def test_kept_versions_say_how_they_were_indexed(tmp_path: Path, local_embedder) -> None:
    wb = make_workbench(tmp_path / "data", embedder=local_embedder, **{"chunk.max-size": 500, "chunk.overlap": 50})
    try:
        [report] = wb.ingestor.ingest_uploads([("a.md", doc_bytes("a"))])
        [doc] = wb.store.list_documents()
    finally:
        wb.close()
    sidecar = json.loads((tmp_path / "data" / "originals" / "biz" / f"{doc.version}.json").read_text())
    assert sidecar == {
        "format": 1, "doc_id": "a.md", "version": doc.version, "file_name": "a.md", "extension": "md",
        "size_bytes": doc.size_bytes, "content_hash": doc.content_hash, "fingerprint": sidecar["fingerprint"],
        "ingested_at": doc.ingested_at, "written_ns": sidecar["written_ns"],
        "original_sha256": hashlib.sha256(doc_bytes("a")).hexdigest(),
        "indexed_with": {"chunk.max-size": 500, "chunk.overlap": 50, "embedder": local_embedder.name, "chunker": "1"}}
    assert len(sidecar["fingerprint"]) == 32 and sidecar["written_ns"] > 0
    assert dataclasses.replace(KeptVersion.from_json(json.dumps(sidecar).encode(), "committed")).doc_id == "a.md"

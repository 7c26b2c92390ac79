"""Kept originals are part of their version (#10 items 1-3): written before the commit, one per version
(no two doc_ids collide), reconciled by recovery, adopted from the old layout, and every document that
cannot be rebuilt is reported by `docs` and `reindex`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from rag_core.cli import main
from rag_core.store import MilvusStore
from tests.helpers import REPO, make_workbench
from tests.store.clients import FailingClient
from tests.store.milvus.test_store import doc_bytes

pytestmark = pytest.mark.milvus  # opens Milvus Lite in its tests: not in `make test-unit`


def originals_dir(data: Path, collection: str = "biz") -> Path:
    return data / "originals" / collection


def kept_files(data: Path) -> set[str]:
    """The names in the originals folder, sidecars left out."""
    folder = originals_dir(data)
    return {p.name for p in folder.iterdir() if not p.name.endswith(".json")} if folder.is_dir() else set()


def sidecar_files(data: Path) -> set[str]:
    folder = originals_dir(data)
    return {p.name for p in folder.iterdir() if p.name.endswith(".json")} if folder.is_dir() else set()


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


KILL_AFTER_COMMIT = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    sys.path.insert(0, {repo!r})
    from tests.helpers import make_workbench
    from tests.store.clients import FailingClient

    wb = make_workbench(Path({data!r}))
    def insert_then_die(insert, collection, rows, **kwargs):
        result = insert(collection, rows, **kwargs)
        if collection == wb.store.registry.name and any(row["state"] == "active" for row in rows):
            print("committed", flush=True)  # the commit point has just been written
            os.kill(os.getpid(), signal.SIGKILL)
        return result
    wb.store.client = FailingClient(wb.store.client, "insert", insert_then_die)
    wb.ingestor.ingest_uploads([("doc.md", {new!r}), ("fresh.md", {fresh!r})])
    print("survived", flush=True)
""")


def test_killed_right_after_the_commit_the_kept_originals_are_the_new_versions(data: Path, local_embedder) -> None:
    """The window #10 found: the index on the new version, its original not yet written. Now the original is
    written before the commit, so a reindex after the kill rebuilds the new text, not the old (or nothing)."""
    old, new, fresh = doc_bytes("old", 3), doc_bytes("new", 4), doc_bytes("fresh", 2)
    wb = make_workbench(data, embedder=local_embedder)
    wb.ingestor.ingest_uploads([("doc.md", old)])
    wb.close()

    out = subprocess.run([sys.executable, "-c", KILL_AFTER_COMMIT.format(repo=str(REPO), data=str(data), new=new,
                                                                        fresh=fresh)],
                         cwd=REPO, capture_output=True, text=True, timeout=180)
    assert out.returncode == -9 and "committed" in out.stdout and "survived" not in out.stdout, out.stderr[-2000:]

    wb = make_workbench(data, embedder=local_embedder)
    try:
        indexed = {d.doc_id: d for d in wb.store.list_documents()}
        assert "Paragraph 0 of new" in wb.store.get_chunks("doc.md")[0].content  # the index is on the new version
        assert wb.ingestor.original("doc.md") == new and wb.ingestor.original("fresh.md") == fresh
        assert indexed["doc.md"].has_original and indexed["fresh.md"].has_original
        # Killed before their sidecars were renamed committed: recovery did it; the old version's are gone.
        assert sidecar_files(data) == {f"{d.version}.json" for d in indexed.values()}
        reports = wb.ingestor.reindex()
        assert [(r.doc_id, r.status) for r in reports] == [("doc.md", "replaced"), ("fresh.md", "replaced")]
        assert "Paragraph 0 of new" in wb.store.get_chunks("doc.md")[0].content
        assert kept_files(data) == {d.version for d in wb.store.list_documents()}  # the old one's is gone
    finally:
        wb.close()


def test_recovery_removes_originals_no_version_refers_to(data: Path, local_embedder, monkeypatch) -> None:
    wb = make_workbench(data, embedder=local_embedder)
    try:
        wb.ingestor.ingest_uploads([("doc.md", doc_bytes("one", 2))])
        real = wb.store.client

        def killed_before_commit(insert, collection, rows, **kwargs):
            if collection == wb.store.registry.name and any(row["state"] == "active" for row in rows):
                raise RuntimeError("killed")
            return insert(collection, rows, **kwargs)

        monkeypatch.setattr(wb.store, "client", FailingClient(real, "insert", killed_before_commit))
        assert wb.ingestor.ingest_uploads([("doc.md", doc_bytes("two", 2))])[0].status == "failed"
        monkeypatch.setattr(wb.store, "client", real)
        [doc] = wb.store.list_documents()
        assert len(kept_files(data)) == 2 and wb.ingestor.original("doc.md") == doc_bytes("one", 2)
        [pending] = kept_files(data) - {doc.version}
        assert sidecar_files(data) == {f"{doc.version}.json", f"{pending}.pending.json"}  # never committed
        folder = originals_dir(data)
        (folder / "0123456789abcdef").write_bytes(b"left by a crash")
        (folder / "fedcba9876543210.partial").write_bytes(b"half written")
        (folder / "notes.txt").write_bytes(b"not ours")  # only version-named files are ours to remove
        assert wb.store.recover() == 1
        assert kept_files(data) == {doc.version, "notes.txt"} and sidecar_files(data) == {f"{doc.version}.json"}
        # Through a shared server another process may be writing: a young unreferenced original is spared.
        monkeypatch.setattr(MilvusStore, "exclusive_access", lambda self: False)
        young, old = folder / "1111111111111111", folder / "2222222222222222"
        young.write_bytes(b"a write in flight")
        old.write_bytes(b"abandoned long ago")
        os.utime(old, (time.time() - 7 * 3600, time.time() - 7 * 3600))
        wb.store.recover()
        assert young.exists() and not old.exists()
    finally:
        wb.close()


def test_a_removal_interrupted_after_the_commit_is_finished_at_once_in_shared_mode(data: Path, local_embedder,
                                                                                   monkeypatch) -> None:
    """Killed after the registry forgot the old version, before its files were removed: they are retired, so no
    write can still want them, and the next recovery removes them at once, not 6 hours later (#21 item 6)."""
    from rag_core.store.originals.files import OriginalFiles

    wb = make_workbench(data, embedder=local_embedder)
    try:
        wb.ingestor.ingest_uploads([("doc.md", doc_bytes("one", 2))])
        [old] = wb.store.list_documents()
        real = OriginalFiles.remove

        def killed(self, versions):
            raise KeyboardInterrupt("killed")  # not caught by ingest, like the signal

        monkeypatch.setattr(OriginalFiles, "remove", killed)
        with pytest.raises(KeyboardInterrupt):
            wb.ingestor.ingest_uploads([("doc.md", doc_bytes("two", 2))])
        monkeypatch.setattr(OriginalFiles, "remove", real)
        [new] = wb.store.list_documents()
        assert kept_files(data) == {old.version, new.version} and f"{old.version}.retired.json" in sidecar_files(data)
        monkeypatch.setattr(MilvusStore, "exclusive_access", lambda self: False)  # as through the store host
        wb.store.recover()
        assert kept_files(data) == {new.version} and sidecar_files(data) == {f"{new.version}.json"}
        assert wb.ingestor.original("doc.md") == doc_bytes("two", 2)
    finally:
        wb.close()


def test_a_document_and_a_folder_of_the_same_name_both_keep_their_originals(data: Path, local_embedder) -> None:
    wb = make_workbench(data, embedder=local_embedder)
    try:
        reports = wb.ingestor.ingest_uploads([("a.md", doc_bytes("file")), ("a.md/b.md", doc_bytes("inside"))])
        assert [(r.doc_id, r.status) for r in reports] == [("a.md", "added"), ("a.md/b.md", "added")], reports
        assert wb.ingestor.original("a.md") == doc_bytes("file")
        assert wb.ingestor.original("a.md/b.md") == doc_bytes("inside")
        assert {r.status for r in wb.ingestor.reindex()} == {"replaced"}
    finally:
        wb.close()


def make_legacy(data: Path, local_embedder) -> dict[str, bytes]:
    """A data dir as releases before versioned originals left it: the same collections, originals at
    `uploads/<collection>/<doc_id>`. `stale.md` kept the previous version's bytes (the kill window), and
    `lost.md` has none."""
    files = {"a.md": doc_bytes("alpha"), "dir/x.md": doc_bytes("ex"), "stale.md": doc_bytes("stale v2"),
             "lost.md": doc_bytes("lost")}
    wb = make_workbench(data, embedder=local_embedder)
    wb.ingestor.ingest_uploads(files.items())
    versions = {d.doc_id: d.version for d in wb.store.list_documents()}
    wb.close()
    legacy = data / "uploads" / "biz"
    for doc_id, version in versions.items():
        target = legacy / doc_id
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(originals_dir(data) / version, target)
    (legacy / "stale.md").write_bytes(doc_bytes("stale v1"))
    (legacy / "lost.md").unlink()
    shutil.rmtree(data / "originals")
    return files


def test_an_old_data_dir_keeps_working_its_originals_are_adopted(data: Path, local_embedder, capsys) -> None:
    files = make_legacy(data, local_embedder)
    wb = make_workbench(data, embedder=local_embedder)
    try:
        kept = {d.doc_id: d.has_original for d in wb.store.list_documents()}
        assert kept == {"a.md": True, "dir/x.md": True, "lost.md": False, "stale.md": False}
        assert wb.ingestor.original("a.md") == files["a.md"] and wb.ingestor.original("dir/x.md") == files["dir/x.md"]
        legacy = data / "uploads" / "biz"
        assert sorted(p.name for p in legacy.rglob("*")) == ["stale.md"]  # adopted files moved; the stale one stays
        assert wb.ingestor.original("stale.md") is None  # never the old version's bytes
    finally:
        wb.close()

    assert main(["--data-dir", str(data), "docs"]) == 0
    out, err = capsys.readouterr()
    assert "lost.md" in out and "(no kept original)" in out and "a.md  " in out
    assert "2 document(s) have no kept original" in err and "lost.md, stale.md" in err

    assert main(["--data-dir", str(data), "reindex", "--json", "--quiet"]) == 1  # some could not be rebuilt
    reports = {r["doc_id"] or r["path"]: r for r in json.loads(capsys.readouterr().out)}
    assert {d: r["status"] for d, r in reports.items()} == {
        "a.md": "replaced", "dir/x.md": "replaced", "lost.md": "failed", "stale.md": "failed"}
    assert reports["lost.md"]["error_code"] == "no_original" and "ingest it again" in reports["lost.md"]["error"]

    # Ingesting the file again keeps its original: not `unchanged`, though the text is the same.
    wb = make_workbench(data, embedder=local_embedder)
    try:
        [report] = wb.ingestor.ingest_uploads([("stale.md", files["stale.md"])])
        assert report.status == "replaced" and wb.ingestor.original("stale.md") == files["stale.md"]
        assert wb.ingestor.ingest_uploads([("stale.md", files["stale.md"])])[0].status == "unchanged"
    finally:
        wb.close()


def test_reindex_and_delete_name_documents_as_ingest_does(data: Path, local_embedder, capsys) -> None:
    wb = make_workbench(data, embedder=local_embedder)
    wb.ingestor.ingest_uploads([("a.md", doc_bytes("a")), ("dir/x.md", doc_bytes("x"))])
    wb.close()
    assert main(["--data-dir", str(data), "reindex", "--quiet", "./a.md", "dir\\x.md", "nope.md", "../up.md"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("replaced  a.md") and lines[1].startswith("replaced  dir/x.md")
    assert "nope.md: no such document" in lines[2] and lines[2].startswith("failed")
    assert "'..' is not allowed" in lines[3] and lines[3].startswith("failed")
    assert lines[-1] == "2 rebuilt, 2 could not be rebuilt"

    assert main(["--data-dir", str(data), "reindex", "--from", "../other"]) == 2
    err = capsys.readouterr().err
    assert "'../other' is not a valid knowledge base name" in err and "unexpected" not in err

    assert main(["--data-dir", str(data), "delete", ".\\dir/x.md"]) == 0
    assert capsys.readouterr().out.strip() == "deleted dir/x.md"
    assert main(["--data-dir", str(data), "delete", "./dir/x.md"]) == 2
    assert "No document './dir/x.md' ('dir/x.md') in the knowledge base" in capsys.readouterr().err
    assert main(["--data-dir", str(data), "delete", "../a.md"]) == 2
    err = capsys.readouterr().err
    assert "'..' is not allowed" in err and "Traceback" not in err
    assert main(["--data-dir", str(data), "docs", "--json"]) == 0
    assert [d["doc_id"] for d in json.loads(capsys.readouterr().out)] == ["a.md"]
    assert kept_files(data) and len(kept_files(data)) == 1  # the deleted document's original went with it

"""Each kept original's sidecar, crash-safely: written before the original and the commit, renamed
committed after it, retired before the registry forgets the version, reconciled by recovery, and written
on open for data dirs kept before sidecars (a migration). So a folder of kept originals always says which
document each version is, and never offers one that was deleted or replaced."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from rag_core.store import MilvusStore
from rag_core.store.originals.files import OriginalFiles
from rag_core.store.originals.folder import read_folder
from tests.contracts.store import DIM, EMBEDDER, new_version, text_of
from tests.helpers import make_workbench
from tests.store.clients import FailingClient
from tests.store.milvus.test_store import doc_bytes
from tests.store.originals.test_originals import make_legacy

pytestmark = pytest.mark.milvus  # opens Milvus Lite in its tests: not in `make test-unit`


def folder(data: Path) -> Path:
    return data / "originals" / "biz"


def names(data: Path) -> set[str]:
    return {p.name for p in folder(data).iterdir()} if folder(data).is_dir() else set()


def committed(*versions: str) -> set[str]:
    """The files of committed versions: the original and its sidecar."""
    return {name for v in versions for name in (v, f"{v}.json")}


class Killed(RuntimeError):
    pass


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


def test_a_write_killed_before_its_original_leaves_a_pending_sidecar_that_recovery_removes(
        data: Path, local_embedder, monkeypatch) -> None:
    """(Killed after the original, before the commit: tests/store/originals/test_originals.py.)"""
    wb = make_workbench(data, embedder=local_embedder)
    try:
        wb.ingestor.ingest_uploads([("doc.md", doc_bytes("one"))])
        [doc] = wb.store.list_documents()
        real = OriginalFiles._write_whole

        def die_on_the_original(self, target: Path, payload: bytes) -> None:
            if not target.name.endswith(".json"):
                raise Killed("killed between the sidecar and the original")
            real(self, target, payload)

        monkeypatch.setattr(OriginalFiles, "_write_whole", die_on_the_original)
        assert wb.ingestor.ingest_uploads([("doc.md", doc_bytes("two"))])[0].status == "failed"
        monkeypatch.undo()
        [pending] = [n for n in names(data) if n.endswith(".pending.json")]
        assert names(data) == committed(doc.version) | {pending}
        assert read_folder(folder(data)).list_documents()[0].version == doc.version  # never offered
        wb.store.recover()
        assert names(data) == committed(doc.version)
    finally:
        wb.close()


def test_a_delete_killed_before_the_registry_forgot_the_document_is_undone_on_open(data: Path, local_embedder,
                                                                                  monkeypatch) -> None:
    wb = make_workbench(data, embedder=local_embedder)
    wb.ingestor.ingest_uploads([("doc.md", doc_bytes("one"))])
    [doc] = wb.store.list_documents()
    real = OriginalFiles.retire

    def retire_then_die(self, versions):
        real(self, versions)
        raise Killed("killed after retiring")

    monkeypatch.setattr(OriginalFiles, "retire", retire_then_die)
    with pytest.raises(Killed):
        wb.ingestor.delete("doc.md")
    monkeypatch.undo()
    wb.close()
    assert names(data) == {doc.version, f"{doc.version}.retired.json"}
    wb = make_workbench(data, embedder=local_embedder)
    try:
        assert [d.doc_id for d in wb.store.list_documents()] == ["doc.md"]  # the delete never happened
        assert names(data) == committed(doc.version)  # so its version is committed again
    finally:
        wb.close()


def test_a_delete_killed_before_the_files_went_never_brings_the_document_back(data: Path, local_embedder,
                                                                             monkeypatch) -> None:
    wb = make_workbench(data, embedder=local_embedder)
    try:
        wb.ingestor.ingest_uploads([("gone.md", doc_bytes("gone")), ("kept.md", doc_bytes("kept"))])
        versions = {d.doc_id: d.version for d in wb.store.list_documents()}

        def killed(self, versions):
            raise Killed("killed before the files were removed")

        monkeypatch.setattr(OriginalFiles, "remove", killed)
        with pytest.raises(Killed):
            wb.ingestor.delete("gone.md")
        monkeypatch.undo()
        assert [d.doc_id for d in wb.store.list_documents()] == ["kept.md"]
        # A database lost now: the deleted document is not restored by a rebuild.
        assert [d.doc_id for d in read_folder(folder(data)).list_documents()] == ["kept.md"]
        wb.store.recover()
        assert names(data) == committed(versions["kept.md"])
    finally:
        wb.close()


def test_two_committed_versions_of_one_document_keep_only_the_newest(data: Path, local_embedder,
                                                                     monkeypatch) -> None:
    """As two processes committing one document through a server leave it (neither retired the other's):
    recovery drops the older version and retires its kept original first, so it is not kept as a lost
    database's and never offered by a rebuild."""
    wb = make_workbench(data, embedder=local_embedder)
    try:
        wb.ingestor.ingest_uploads([("doc.md", doc_bytes("one"))])
        [old] = wb.store.list_documents()

        def killed(delete, collection, **kwargs):
            if collection == wb.store.collection:
                raise Killed("killed before step 4")
            return delete(collection, **kwargs)

        monkeypatch.setattr(OriginalFiles, "retire", lambda self, versions: None)
        monkeypatch.setattr(wb.store, "client", FailingClient(wb.store.client, "delete", killed))
        assert wb.ingestor.ingest_uploads([("doc.md", doc_bytes("two"))])[0].status == "failed"
        monkeypatch.undo()
        [new] = wb.store.list_documents()
        assert names(data) == committed(old.version, new.version)
        wb.store.recover()
        assert names(data) == committed(new.version)
    finally:
        wb.close()


def test_data_dirs_kept_before_sidecars_get_them_on_open(data: Path, local_embedder) -> None:
    """A migration: originals named by version without sidecars (the previous release), and originals of
    the older layout adopted on open, all get a committed sidecar from the registry."""
    files = make_legacy(data, local_embedder)  # uploads/biz/<doc_id>: a.md and dir/x.md will be adopted
    wb = make_workbench(data, embedder=local_embedder)
    try:
        wb.ingestor.ingest_uploads([("b.md", doc_bytes("bee"))])
        docs = {d.doc_id: d for d in wb.store.list_documents()}
    finally:
        wb.close()
    for sidecar in folder(data).glob("*.json"):
        sidecar.unlink()  # as the previous release kept them
    wb = make_workbench(data, embedder=local_embedder)
    try:
        kept = {d.doc_id for d in docs.values() if d.has_original}
        assert kept == {"a.md", "b.md", "dir/x.md"}
        assert names(data) == committed(*(docs[d].version for d in kept))
        for doc_id in kept:
            sidecar = json.loads((folder(data) / f"{docs[doc_id].version}.json").read_text())
            assert (sidecar["doc_id"], sidecar["content_hash"], sidecar["ingested_at"], sidecar["size_bytes"]) == (
                doc_id, docs[doc_id].content_hash, docs[doc_id].ingested_at, docs[doc_id].size_bytes)
    finally:
        wb.close()
    restorable = read_folder(folder(data))
    assert [d.doc_id for d in restorable.list_documents()] == ["a.md", "b.md", "dir/x.md"]
    assert restorable.read_original("a.md") == files["a.md"] and restorable.notes == []


def test_through_a_server_versions_other_machines_deleted_are_not_kept(milvus_server: str, tmp_path: Path) -> None:
    """Through a Milvus server each process keeps originals in its own data dir, and another machine may
    delete or replace a document whose original is here: its committed version is removed after 6 hours
    (a Lite database shares its data dir with its originals: there it is a lost database's, and kept).
    A server that has no document at all (its data lost) leaves them for `rebuild`."""
    here = MilvusStore(milvus_server, "sidecars", token="root:Milvus", timeout=30, originals=tmp_path / "here")
    there = MilvusStore(milvus_server, "sidecars", token="root:Milvus", timeout=30, originals=tmp_path / "there")
    try:
        for store in (here, there):
            store.open(EMBEDDER, DIM)
        here.replace_documents([new_version(doc_id, text_of(doc_id), original=doc_id.encode())
                                for doc_id in ("x.md", "y.md")])
        versions = {d.doc_id: d.version for d in here.list_documents()}
        assert there.delete_document("x.md")  # another machine
        hours_ago = time.time() - 7 * 3600
        for path in (tmp_path / "here").iterdir():
            os.utime(path, (hours_ago, hours_ago))
        here.recover()
        assert {p.name for p in (tmp_path / "here").iterdir()} == committed(versions["y.md"])
        assert there.delete_document("y.md")  # now the server has no document at all
        here.recover()
        assert {p.name for p in (tmp_path / "here").iterdir()} == committed(versions["y.md"])
    finally:
        here.drop()
        here.close()
        there.close()

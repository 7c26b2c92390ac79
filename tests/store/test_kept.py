"""The records kept beside an index (store.kept): the chunk edits and labels document in a file, in memory, or in a
row of the shared-state database (SQLite and PostgreSQL); two "machines" (stores with their own data folder and lock
file, one database) see each other's edits and tags and wait for each other's lock; a data folder's file is taken
into the database once."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from rag_core.bootstrap import kept_database
from rag_core.config import load_settings
from rag_core.db.engine import engine
from rag_core.db.migrate import upgrade
from rag_core.db.tables import kept_records
from rag_core.files import FileLock
from rag_core.store.edits import DAMAGED, ChunkEdits
from rag_core.store.kept import EDITS, LABELS, FileDocument, KeptDocument, MemoryDocument
from rag_core.store.kept_sql import SqlDocument, database_lock
from rag_core.store.labels import DocumentLabels


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    url = f"sqlite:///{tmp_path / 'team.db'}" if request.param == "sqlite" else request.getfixturevalue("postgres_db")
    made = engine(url)
    upgrade(made)
    yield made
    made.dispose()


def machine(db: Engine, folder: Path, collection: str = "kb") -> tuple[ChunkEdits, DocumentLabels]:
    """The chunk edits and labels of `collection` as a store on one machine keeps them (store.milvus.store)."""
    lock = FileLock(folder / f".{collection}.lock", beyond=database_lock(db, collection))
    edits = SqlDocument(db, collection, EDITS, folder / f"{collection}.edits.json")
    labels = SqlDocument(db, collection, LABELS, folder / f"{collection}.labels.json")
    return ChunkEdits(lock=lock, document=edits), DocumentLabels(lock=lock, document=labels)


def check_document(document: KeptDocument) -> None:
    assert document.read() == {}
    document.write({"a": {"history": [{"who": "ann"}]}, "ü": {}})
    got = document.read()
    assert got == {"a": {"history": [{"who": "ann"}]}, "ü": {}}
    got["a"]["history"].append("changed")  # a copy
    assert document.read()["a"]["history"] == [{"who": "ann"}]
    document.write({"b": {}})
    assert document.read() == {"b": {}}
    document.remove()
    assert document.read() == {}


def test_a_file_and_memory_keep_the_document(tmp_path: Path) -> None:
    check_document(FileDocument(tmp_path / "kb.edits.json", DAMAGED))
    check_document(MemoryDocument())


def test_a_database_row_keeps_the_document(db: Engine) -> None:
    check_document(SqlDocument(db, "kb", EDITS))
    check_document(SqlDocument(db, "kb", LABELS))


def test_two_machines_see_each_others_edits_and_tags(db: Engine, tmp_path: Path) -> None:
    edits_a, labels_a = machine(db, tmp_path / "a")
    edits_b, labels_b = machine(db, tmp_path / "b")
    edits_a.set_disabled("a.md#chunk-0", doc_id="a.md", version="v", chunk_hash="h", disabled=True, who="ann")
    assert edits_b.disabled() == {"a.md#chunk-0": "h"}
    edits_b.begin("a.md#chunk-1", doc_id="a.md", version="v", chunk_hash="h1", changes={"text": "new"},
                  what="text edited", who="bob", content="new", writer={"w": "b"})
    assert list(edits_a.pending()) == ["a.md#chunk-1"]
    edits_a.finish("a.md#chunk-1")
    assert edits_b.all()["a.md#chunk-1"]["text"] == "new" and not edits_b.pending()
    labels_b.set_tags("a.md", {"team": ["sre"]})
    labels_a.set_tags("a.md", {"owner": ["ann"]})
    assert labels_b.tags("a.md") == {"team": ["sre"], "owner": ["ann"]}  # neither change lost
    other, _ = machine(db, tmp_path / "a", collection="other")
    assert other.all() == {}  # another knowledge base's row
    assert not (tmp_path / "a" / "kb.edits.json").exists() and not (tmp_path / "b" / "kb.labels.json").exists()


def test_the_lock_of_one_machine_keeps_the_others_out_until_it_is_released(db: Engine, tmp_path: Path) -> None:
    edits_a, _ = machine(db, tmp_path / "a")
    edits_b, _ = machine(db, tmp_path / "b")
    other, _ = machine(db, tmp_path / "b", collection="other")

    def try_in_another_thread(edits: ChunkEdits) -> bool:
        got: list[bool] = []

        def attempt() -> None:
            with edits.lock(wait=False) as free:
                got.append(free)
        thread = threading.Thread(target=attempt)
        thread.start()
        thread.join()
        return got[0]

    with edits_a.lock():
        with edits_a.lock():  # re-entrant in its thread
            assert not try_in_another_thread(edits_b)  # another data folder: the database's lock stops it
        assert not try_in_another_thread(edits_b)
        assert try_in_another_thread(other)  # another knowledge base's lock is free
    assert try_in_another_thread(edits_b)


def test_a_data_folders_files_are_taken_into_the_database_once(db: Engine, tmp_path: Path) -> None:
    folder = tmp_path / "data" / "originals"
    old_edits, old_labels = ChunkEdits(folder / "kb.edits.json"), DocumentLabels(folder / "kb.labels.json")
    old_edits.set_disabled("a.md#chunk-0", doc_id="a.md", version="v", chunk_hash="h", disabled=True, who="ann")
    old_labels.set_tags("a.md", {"team": ["sre"]})
    before = old_edits.all()
    edits, labels = machine(db, folder)
    assert edits.disabled() == {"a.md#chunk-0": "h"} and labels.tags("a.md") == {"team": ["sre"]}
    with db.connect() as conn:
        rows = dict(conn.execute(sa.select(kept_records.c.kind, kept_records.c.document)).all())
    assert json.loads(rows[EDITS]) == before and json.loads(rows[LABELS])["a.md"]["tags"] == {"team": ["sre"]}
    assert sorted(p.name for p in folder.glob("*.json*") if not p.name.endswith(".lock")) == [
        "kb.edits.json.adopted", "kb.labels.json.adopted"]
    DocumentLabels(folder / "kb.labels.json").set_tags("a.md", {"team": ["dba"]})  # a file made again is not read
    labels.set_tags("a.md", {"owner": ["ann"]})
    assert labels.tags("a.md") == {"team": ["sre"], "owner": ["ann"]}
    edits.drop()  # a dropped knowledge base: its row and files go
    assert edits.all() == {} and [p.name for p in folder.glob("kb.edits.json*")] == ["kb.edits.json.lock"]


def test_the_records_are_in_the_database_only_when_database_url_is_set(tmp_path: Path) -> None:
    assert kept_database(load_settings(data_dir=tmp_path, env={})) is None
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    found = kept_database(load_settings(data_dir=tmp_path, env={}), {"RAG_DATABASE_URL": url})
    assert found is not None and found.url.database == str(tmp_path / "shared.db")


@pytest.mark.milvus
def test_two_api_machines_on_one_milvus_server_and_one_postgresql_share_edits_and_tags(
        tmp_path: Path, milvus_server: str, postgres_db: str, local_embedder) -> None:
    from rag_core.kb.chunk_edits import set_disabled
    from rag_core.kb.tags import tag
    from tests.helpers import SAMPLE_KB, make_workbench

    shared = {"milvus.uri": milvus_server, "database.url": postgres_db, "milvus.collection": "shared"}
    a = make_workbench(tmp_path / "a", local_embedder, **shared)
    b = make_workbench(tmp_path / "b", local_embedder, **shared)
    try:
        (report,) = a.ingestor.ingest_paths([SAMPLE_KB / "runbooks" / "disk_full.md"])
        tag(a.store, report.doc_id, ["team=sre"])
        set_disabled(a.store, f"{report.doc_id}#chunk-0", True, who="ann")
        assert b.store.labels.tags(report.doc_id) == {"team": ["sre"]}
        assert list(b.store.edits.disabled()) == [f"{report.doc_id}#chunk-0"]
        tag(b.store, report.doc_id, ["owner=bob"])
        assert a.store.labels.tags(report.doc_id) == {"team": ["sre"], "owner": ["bob"]}
        assert not [p for p in tmp_path.rglob("shared.*.json*") if not p.name.endswith(".lock")]  # no file beside
    finally:
        a.close()
        b.close()

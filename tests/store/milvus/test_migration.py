"""Schema migration: a collection made by an older version is refused with the command that fixes it,
and `migrate` rebuilds it keeping every vector, surviving a failure at any point."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_core.cli import main
from rag_core.errors import StoreError, StoreMigrationNeeded
from rag_core.kb import resolve
from rag_core.kb.chunk_edits import edit_chunk
from rag_core.kb.tags import tag
from rag_core.scope import parse_scope
from rag_core.store import MilvusStore
from rag_core.store.milvus import schema
from rag_core.text import fold
from tests.helpers import SAMPLE_KB, make_workbench

pytestmark = pytest.mark.milvus  # opens Milvus Lite in its tests: not in `make test-unit`

OLD_ANALYZER = {"tokenizer": "jieba", "filter": ["lowercase", {"type": "stemmer", "language": "english"},
                                                 {"type": "stop", "stop_words": ["_english_"]}]}


def vectors(store: MilvusStore) -> dict[str, list[float]]:
    rows = store.client.query(store.collection, filter="", output_fields=["id", "vector", "content"], limit=16384)
    return {r["id"]: [round(x, 5) for x in r["vector"]] for r in rows}


@pytest.fixture
def old_kb(tmp_path: Path, local_embedder, monkeypatch) -> Path:
    """A knowledge base written by a version-1 workbench (old analyzer)."""
    with monkeypatch.context() as m:  # an older version: its own layout, and no rule against case variants
        m.setattr(schema, "SCHEMA_VERSION", 1)
        m.setattr(schema, "ANALYZER", OLD_ANALYZER)
        m.setattr(resolve, "case_clash", lambda *_: None)
        wb = make_workbench(tmp_path, embedder=local_embedder)
        assert {r.status for r in wb.ingestor.ingest_paths([SAMPLE_KB / "runbooks"])} == {"added"}
        wb.close()
    return tmp_path


def test_an_old_collection_is_refused_with_the_fix(old_kb: Path, local_embedder) -> None:
    with pytest.raises(StoreMigrationNeeded, match=r"python -m rag_core migrate.*keeps every vector"):
        make_workbench(old_kb, embedder=local_embedder)


def test_migrate_keeps_documents_and_vectors(old_kb: Path, local_embedder, monkeypatch) -> None:
    with monkeypatch.context() as m:
        m.setattr(schema, "SCHEMA_VERSION", 1)
        m.setattr(schema, "ANALYZER", OLD_ANALYZER)
        wb = make_workbench(old_kb, embedder=local_embedder)
        before_docs, before_vectors = wb.store.list_documents(), vectors(wb.store)
        wb.close()

    wb = make_workbench(old_kb, embedder=local_embedder, migrate=True)
    try:
        assert wb.store.list_documents() == before_docs
        assert vectors(wb.store) == before_vectors
        assert wb.store.schema.meta(wb.store.collection)["schema"] == schema.SCHEMA_VERSION
        assert wb.retriever.lookup("DiskSpaceLow", search=wb.retriever.defaults.search).evidence
        assert not wb.store.client.has_collection(wb.store.collection + schema.MIGRATING)
    finally:
        wb.close()
    wb = make_workbench(old_kb, embedder=local_embedder)  # opens normally now
    wb.close()


def test_cli_migrate(old_kb: Path, capsys) -> None:
    assert main(["--data-dir", str(old_kb), "docs"]) == 2
    assert "python -m rag_core migrate" in capsys.readouterr().err
    assert main(["--data-dir", str(old_kb), "migrate"]) == 0
    assert "biz: up to date (4 documents" in capsys.readouterr().out
    assert main(["--data-dir", str(old_kb), "migrate"]) == 0


@pytest.mark.parametrize("fail_on_copy", [1, 2])
def test_a_failed_migration_loses_nothing_and_the_next_open_finishes(old_kb: Path, local_embedder, monkeypatch,
                                                                     fail_on_copy: int) -> None:
    with monkeypatch.context() as m:
        m.setattr(schema, "SCHEMA_VERSION", 1)
        m.setattr(schema, "ANALYZER", OLD_ANALYZER)
        wb = make_workbench(old_kb, embedder=local_embedder)
        before = vectors(wb.store)
        wb.close()

    real_copy = schema.Schema.copy_rows
    calls = {"n": 0}

    def copy_then_fail(self, source, target):
        calls["n"] += 1
        if calls["n"] == fail_on_copy:
            raise RuntimeError("power cut")
        return real_copy(self, source, target)

    with monkeypatch.context() as m:
        m.setattr(schema.Schema, "copy_rows", copy_then_fail)
        with pytest.raises(RuntimeError, match="power cut"):
            make_workbench(old_kb, embedder=local_embedder, migrate=True)
    # 1: failed while copying into the temporary collection: the old one is intact, still refused.
    # 2: failed while copying back: the next open (even without migrate) finishes from the copy.
    if fail_on_copy == 1:
        with pytest.raises(StoreMigrationNeeded):
            make_workbench(old_kb, embedder=local_embedder)
        wb = make_workbench(old_kb, embedder=local_embedder, migrate=True)
    else:
        wb = make_workbench(old_kb, embedder=local_embedder)
    try:
        assert vectors(wb.store) == before
        assert not wb.store.client.has_collection(wb.store.collection + schema.MIGRATING)
    finally:
        wb.close()


def test_migrating_a_layout_2_collection_gives_its_rows_their_documents_labels(tmp_path: Path, local_embedder,
                                                                               ) -> None:
    """Layout 2 had no `labels` field: the migration fills it from the labels file and the registry (the labels'
    source of truth), so a metadata filter finds the same documents right after it."""
    wb = make_workbench(tmp_path, embedder=local_embedder)
    folder = tmp_path / "src"
    (folder / "runbooks").mkdir(parents=True)
    (folder / "runbooks" / "disk_full.md").write_text("---\nservice: storage\n---\n" + (
        SAMPLE_KB / "runbooks" / "disk_full.md").read_text())
    (folder / "cpu_high.md").write_bytes((SAMPLE_KB / "runbooks" / "cpu_high.md").read_bytes())
    assert {r.status for r in wb.ingestor.ingest_paths([folder])} == {"added"}
    tag(wb.store, "cpu_high.md", ["team=sre"])
    store, client = wb.store, wb.store.client
    expected = {c.id: c.labels for d in store.list_documents() for c in store.get_chunks(d.doc_id)}
    rows = client.query(store.collection, filter="", output_fields=[*schema.CHUNK_FIELDS, "vector"], limit=16384)
    client.drop_collection(store.collection)  # the same rows in layout 2, without labels
    store.schema.create_chunks(store.collection, layout=2)
    client.insert(store.collection, [{k: v for k, v in r.items() if k != "labels"} for r in rows])
    wb.close()
    with pytest.raises(StoreMigrationNeeded, match="layout 2; this version uses 4"):
        make_workbench(tmp_path, embedder=local_embedder)

    wb = make_workbench(tmp_path, embedder=local_embedder, migrate=True)
    try:
        store = wb.store
        assert {c.id: c.labels for d in store.list_documents() for c in store.get_chunks(d.doc_id)} == expected
        assert "service=storage" in expected[store.get_chunks("runbooks/disk_full.md")[0].id]
        for items, doc_id in ((["team=sre"], "cpu_high.md"), (["service=storage", "folder=runbooks/"],
                                                               "runbooks/disk_full.md")):
            result = wb.retriever.lookup("disk cpu", scope=parse_scope(items))
            assert result.traces and {t.doc_id for t in result.traces} == {doc_id}
    finally:
        wb.close()




def test_migrate_refuses_while_a_case_variant_exists(tmp_path: Path, local_embedder, monkeypatch) -> None:
    """A database made before names were compared without case may hold `biz` and `BIZ`; Milvus Lite keeps both in
    one table, so rebuilding `biz` would drop `BIZ`'s rows: migrate refuses in one line and changes nothing."""
    before = {}
    with monkeypatch.context() as m:  # an older version: its own layout, and no rule against case variants
        m.setattr(schema, "SCHEMA_VERSION", 1)
        m.setattr(schema, "ANALYZER", OLD_ANALYZER)
        m.setattr(resolve, "case_clash", lambda *_: None)
        for name, folder in (("biz", "runbooks"), ("BIZ", "policies")):
            wb = make_workbench(tmp_path, embedder=local_embedder, **{"milvus.collection": name})
            wb.ingestor.ingest_paths([SAMPLE_KB / folder])
            wb.close()
        wb = make_workbench(tmp_path, embedder=local_embedder)
        before = vectors(wb.store)
        wb.close()
    with pytest.raises(StoreError, match=r"'biz' cannot be migrated while 'BIZ' exists.*kb delete BIZ"):
        make_workbench(tmp_path, embedder=local_embedder, migrate=True)
    with monkeypatch.context() as m:
        m.setattr(schema, "SCHEMA_VERSION", 1)
        m.setattr(schema, "ANALYZER", OLD_ANALYZER)
        wb = make_workbench(tmp_path, embedder=local_embedder)
        try:
            assert before and vectors(wb.store) == before
            assert wb.store.client.has_collection("BIZ")
        finally:
            wb.close()


def test_migrating_a_layout_3_collection_folds_its_rows_for_bm25_and_keeps_them(tmp_path: Path, local_embedder,
                                                                                ) -> None:
    """Layout 3 analysed `content` for BM25; layout 4 analyses `bm25_text`, the content folded to Simplified
    Chinese. The migration makes it for every row, keeping the rows (vectors, chunk edits, labels); then a
    Simplified question finds a Traditional chunk, and the writers after it (a chunk edit, new tags) fold too."""
    wb = make_workbench(tmp_path, embedder=local_embedder)
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "trad.md").write_text("---\nservice: database\n---\n# 記憶體\n\n資料庫的記憶體使用率過高時，先檢查"
                                    "連線數與緩衝區設定。\n\n## 網路\n\n網路延遲升高時，檢查交換器與防火牆。\n")
    (folder / "cpu_high.md").write_bytes((SAMPLE_KB / "runbooks" / "cpu_high.md").read_bytes())
    assert {r.status for r in wb.ingestor.ingest_paths([folder])} == {"added"}
    tag(wb.store, "cpu_high.md", ["team=sre"])
    edit_chunk(wb.store, wb.embedder, "trad.md#chunk-1", keywords=["緩衝區調校"])
    store, client = wb.store, wb.store.client
    expected = {c.id: (c.content, c.labels, c.metadata) for d in store.list_documents()
                for c in store.get_chunks(d.doc_id)}
    before = vectors(store)
    rows = client.query(store.collection, filter="", output_fields=[*schema.CHUNK_FIELDS, "vector"], limit=16384)
    client.drop_collection(store.collection)  # the same rows in layout 3: BM25 over `content`, no `bm25_text`
    store.schema.create_chunks(store.collection, layout=3)
    client.insert(store.collection, rows)
    wb.close()
    with pytest.raises(StoreMigrationNeeded, match="layout 3; this version uses 4"):
        make_workbench(tmp_path, embedder=local_embedder)

    wb = make_workbench(tmp_path, embedder=local_embedder, migrate=True)
    try:
        store, client = wb.store, wb.store.client
        assert {c.id: (c.content, c.labels, c.metadata) for d in store.list_documents()
                for c in store.get_chunks(d.doc_id)} == expected
        assert vectors(store) == before
        assert "緩衝區調校" in store.get_chunks("trad.md")[1].content  # the edit, as it was
        folded = client.query(store.collection, filter='doc_id == "trad.md"', output_fields=["content", "bm25_text"])
        assert len(folded) == 3 and all(r["bm25_text"] == fold(r["content"]) for r in folded)
        assert any("记忆体" in r["bm25_text"] and "記憶體" in r["content"] for r in folded)

        def bm25(question: str, *labels: str) -> list[str]:
            return [h.metadata["doc_id"] for h in store.search_bm25(question, 5, {"labels": list(labels)} if labels
                                                                    else None)]

        assert bm25("记忆体 连线数")[:1] == ["trad.md"]
        assert set(bm25("缓冲区调校", "service=database")) == {"trad.md"}
        assert bm25("CPU throttling", "team=sre")[:1] == ["cpu_high.md"]
        edit_chunk(store, wb.embedder, "trad.md#chunk-2", text="網路延遲升高時，檢查交換器、防火牆與負載平衡器。")
        tag(store, "trad.md", ["team=dba"])  # relabels every row of the document
        assert set(bm25("负载平衡器", "team=dba")) == {"trad.md"}
        assert set(bm25("記憶體 連線數", "team=dba")) == {"trad.md"}
    finally:
        wb.close()
    wb = make_workbench(tmp_path, embedder=local_embedder)  # opens normally now
    wb.close()

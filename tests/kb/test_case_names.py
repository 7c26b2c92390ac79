"""Knowledge-base names that differ only by letter case, on real Milvus Lite: Lite keeps collections in SQLite
tables, whose names SQLite compares without case, so `biz` and `BIZ` are one table (dropping `BIZ` empties `biz`,
at once or after the server restarts). A case variant of an existing name is refused; a database that already
holds one (made before the rule) still lists both, and deleting one leaves the other's documents where they are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_core.bootstrap import build_workbench, connect_store, knowledge_bases
from rag_core.cli import main
from rag_core.config import originals_dirs
from rag_core.errors import KnowledgeBaseError
from rag_core.kb.manage import KnowledgeBases
from rag_core.records import KnowledgeBase
from tests.helpers import SAMPLE_KB
from tests.kb.conftest import settings_for

pytestmark = pytest.mark.milvus  # opens Milvus Lite in its tests: not in `make test-unit`

DISK = SAMPLE_KB / "runbooks" / "disk_full.md"
CPU = SAMPLE_KB / "runbooks" / "cpu_high.md"


def run(data: Path, capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["--data-dir", str(data), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_case_variant_of_a_name_is_refused_and_biz_keeps_its_documents(tmp_path: Path, capsys) -> None:
    # The data loss of issue 21: `kb create BIZ` next to biz, then `kb delete BIZ --yes` and a restart of the store
    # left biz with no documents. No store is kept open here, so every command starts Milvus Lite again.
    data = tmp_path / "data"
    assert run(data, capsys, "ingest", str(DISK), "--quiet")[0] == 0
    for name in ("BIZ", "Biz"):
        code, _, err = run(data, capsys, "kb", "create", name)
        assert code == 2 and f"{name!r} differs only by letter case from the knowledge base 'biz'" in err
        assert err.count("\n") == 1
    code, _, err = run(data, capsys, "kb", "copy", "biz", "BIZ", "--quiet")  # a copy's new name: the same rule
    assert code == 2 and "'BIZ' differs only by letter case from the knowledge base 'biz'" in err
    code, _, err = run(data, capsys, "kb", "delete", "BIZ", "--yes")
    assert code == 2 and "There is no knowledge base 'BIZ'; did you mean 'biz'?" in err
    code, _, err = run(data, capsys, "--set", "milvus.collection=BIZ", "docs")  # the default one: the same rule
    assert code == 2 and "milvus.collection (the default knowledge base): 'BIZ' differs only by letter case" in err
    code, out, _ = run(data, capsys, "kb", "list", "--json")
    [biz] = json.loads(out)
    assert code == 0 and biz["name"] == "biz" and biz["documents"] == 1 and biz["chunks"] > 0
    code, out, _ = run(data, capsys, "search", "How do I free disk space?", "--json")
    assert code == 0 and json.loads(out)["evidence"][0]["doc_id"] == "disk_full.md"


def test_collections_of_another_name_in_other_case_are_refused(tmp_path: Path, local_embedder) -> None:
    # `Foo` next to `foo_docs`: a new knowledge base's registry (or migration copy) must not be a collection the
    # database has in other case either, even one no knowledge base owns.
    settings = settings_for(tmp_path / "data")
    with knowledge_bases(settings, {}, load_embedder=lambda s: local_embedder) as kbs:
        kbs.create("orphan")
        kbs.catalog.client.drop_collection("orphan")  # its registry is left, owned by no knowledge base
        kbs.catalog.forget("orphan")
        for name, taken in (("ORPHAN", "'orphan_docs', which Milvus Lite takes for 'ORPHAN_docs'"),
                            ("orphan", "a collection named 'orphan_docs' that is not a knowledge base")):
            with pytest.raises(KnowledgeBaseError, match=taken) as caught:
                kbs.create(name)
            assert caught.value.code == "exists"
        assert kbs.names() == ["biz"]


def test_a_database_holding_case_variants_lists_both_and_a_delete_keeps_the_others_storage(
        tmp_path: Path, local_embedder) -> None:
    data = tmp_path / "data"
    settings = settings_for(data)
    with knowledge_bases(settings, {}, load_embedder=lambda s: local_embedder) as kbs:
        _fill(kbs, "biz", DISK)
        # BIZ as a database from before the rule holds it: a catalog entry and collections, made directly
        entry = kbs.catalog.write(KnowledgeBase("BIZ", dict(kbs.get("biz").settings), created_at="2026-11-30T00:00:00Z",
                                                note="made before names were compared without case"))
        wb = build_workbench(settings.for_kb("BIZ"), env={}, embedder=local_embedder, kb=entry)
        try:
            assert wb.ingestor.ingest_paths([CPU])[0].status == "added"
        finally:
            wb.close()
        assert kbs.names() == ["BIZ", "biz"]
        for name in ("biz", "BIZ"):  # both can be read (nothing crashes), even though they share their tables
            info = kbs.info(name)
            assert not info.error and info.documents >= 1

        # the store itself never drops a collection the database also has in other case, nor one it is told to spare
        store = connect_store(settings, "BIZ")
        try:
            assert store.drop() == ["BIZ", "BIZ_docs"]
        finally:
            store.close()
        store = connect_store(settings, "biz")
        try:
            assert store.drop(spare=["biz", "biz_docs"], originals=False) == ["biz", "biz_docs"]
        finally:
            store.close()

        note = kbs.delete("BIZ")
        assert kbs.names() == ["biz"]
        assert "its collections BIZ, BIZ_docs were kept" in note and "shows in 'biz'" in note
        assert kbs.catalog.client.has_collection("biz") and kbs.catalog.client.has_collection("BIZ")
        assert kbs.adopt() == []  # the collections left behind do not come back as a knowledge base
        assert originals_dirs(settings, "biz")["originals"].is_dir()
    # a new process (Milvus Lite started again): biz still holds its document, its chunks and its kept original
    with knowledge_bases(settings, {}, load_embedder=lambda s: local_embedder) as kbs:
        assert kbs.names() == ["biz"]
        wb = kbs.open("biz")
        try:
            assert "disk_full.md" in [d.doc_id for d in wb.store.list_documents()]
            assert len(wb.store.get_chunks("disk_full.md")) > 0
            assert wb.ingestor.original("disk_full.md") == DISK.read_bytes()
            assert wb.retriever.lookup("How do I free disk space?").evidence[0].doc_id == "disk_full.md"
        finally:
            wb.close()


def test_a_delete_spares_what_the_catalog_says_another_knowledge_base_uses(tmp_path: Path, local_embedder) -> None:
    # Whatever the store's rules: FOO is a catalog entry from before the rule that was never opened, so the
    # database has no collection FOO for the store to see; only the catalog knows that foo's collections, and
    # the folder of its kept originals, are FOO's too (a symlink stands for a case-insensitive file system).
    settings = settings_for(tmp_path / "data")
    with knowledge_bases(settings, {}, load_embedder=lambda s: local_embedder) as kbs:
        kbs.create("foo")
        _fill(kbs, "foo", DISK)
        kbs.catalog.write(KnowledgeBase("FOO", dict(kbs.get("foo").settings), created_at="2026-11-30T00:00:00Z",
                                        note="made before names were compared without case"))
        client = kbs.catalog.client
        assert not {"FOO", "FOO_docs"} & set(client.list_collections())
        folder = originals_dirs(settings, "foo")["originals"]
        folder.with_name("FOO").symlink_to(folder, target_is_directory=True)
        files = {p.name for p in folder.iterdir()}
        assert files  # the document's kept original and its sidecar

        note = kbs.delete("foo")
        assert kbs.names() == ["FOO", "biz"]
        assert "its collections foo, foo_docs were kept" in note and "knowledge base 'FOO''s" in note
        assert client.has_collection("foo") and client.has_collection("foo_docs")
        assert {p.name for p in folder.iterdir()} == files  # FOO's folder too: not emptied


def _fill(kbs: KnowledgeBases, name: str, path: Path) -> None:
    wb = kbs.open(name)
    try:
        assert wb.ingestor.ingest_paths([path])[0].status == "added"
    finally:
        wb.close()

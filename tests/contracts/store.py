"""The ChunkStore contract (rag_core.ports.ChunkStore): what the README promises about storage, checked
on every adapter. A test module subclasses `ChunkStoreContract` once per adapter and provides:

- a `store` fixture: an opened store for `EMBEDDER`/`DIM`, shared by the module (tests use their own
  doc_ids, so they do not see each other's documents; `empty_store` drops it first);
- `break_commit(store, monkeypatch)`: make the next `replace_documents` of `store` raise `InterruptedWrite`
  after the new version's chunks are written but before its commit (as a killed process would stop);
- (a store keeps originals: Milvus stores are given a folder for them).

Vectors are synthetic (a seeded random unit vector per chunk text), so no embedder is needed and dense
rankings are exact: a chunk's own vector finds that chunk first.
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from rag_core.chunking import chunk_text
from rag_core.errors import StoreError
from rag_core.ports import ChunkStore
from rag_core.records import Document, IndexedVersion, NewVersion, StoredChunk, StoredDocument

EMBEDDER, DIM = "test:contract", 8
INJECTION = 'x" or id != "'


class InterruptedWrite(RuntimeError):
    """Raised by the seam `break_commit` installs."""


def vector(text: str) -> np.ndarray:
    rng = np.random.default_rng(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little"))
    v = rng.normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def document(doc_id: str, text: str) -> Document:
    return Document(doc_id=doc_id, text=text, file_name=doc_id.rsplit("/", 1)[-1], extension="md",
                    size_bytes=len(text.encode()), content_hash=hashlib.sha256(text.encode()).hexdigest())


def text_of(topic: str, paragraphs: int = 3) -> str:
    body = "\n\n".join(f"Paragraph {i} about {topic}. " + f"The {topic} notes say more about {topic}. " * 3
                       for i in range(paragraphs))
    return f"# {topic}\n\n{body}\n"


def new_version(doc_id: str, text: str, fingerprint: str = "fp-1", original: bytes | None = None) -> NewVersion:
    doc = document(doc_id, text)
    chunks = chunk_text(text, 200, 20)
    return NewVersion(doc, chunks, np.stack([vector(c.text) for c in chunks]), fingerprint, original)


class ChunkStoreContract:
    @pytest.fixture
    def store(self) -> ChunkStore:
        raise NotImplementedError("a test module provides the adapter under test")

    def break_commit(self, store: ChunkStore, monkeypatch: pytest.MonkeyPatch) -> None:
        raise NotImplementedError

    @pytest.fixture
    def empty_store(self, store: ChunkStore) -> ChunkStore:
        store.drop()
        store.open(EMBEDDER, DIM)
        return store

    # ------------------------------------------------------------------ shape of the port
    def test_is_a_chunk_store(self, store: ChunkStore) -> None:
        assert isinstance(store, ChunkStore)

    def test_an_empty_store(self, empty_store: ChunkStore) -> None:
        store = empty_store
        assert store.list_documents() == [] and store.is_empty() and store.count_chunks() == 0
        assert store.get_chunks("a.md") == [] and store.fingerprints(["a.md"]) == {}
        assert store.search_dense(vector("anything"), 5) == []
        assert store.search_bm25("anything", 5) == []
        assert store.search_both(vector("anything"), "anything", 5) == ([], [])
        assert store.delete_document("a.md") is False
        assert store.recover() == 0

    # ------------------------------------------------------------------ writes and reads
    def test_a_first_version_is_listed_with_its_chunks(self, store: ChunkStore) -> None:
        item = new_version("first/a.md", text_of("alpha"), "fp-alpha")
        [result] = store.replace_documents([item])
        assert result.replaced is False and result.version
        [listed] = [d for d in store.list_documents() if d.doc_id == "first/a.md"]
        assert isinstance(listed, StoredDocument)
        assert (listed.file_name, listed.extension, listed.size_bytes, listed.chunks, listed.content_hash,
                listed.version) == ("a.md", "md", item.doc.size_bytes, len(item.chunks), item.doc.content_hash,
                                    result.version)
        assert listed.ingested_at
        chunks = store.get_chunks("first/a.md")
        assert all(isinstance(c, StoredChunk) for c in chunks)
        assert [c.content for c in chunks] == [c.text for c in item.chunks]
        assert [c.chunk_index for c in chunks] == list(range(len(item.chunks)))
        assert {(c.doc_id, c.source, c.version) for c in chunks} == {("first/a.md", "first/a.md", result.version)}
        for stored, chunk in zip(chunks, item.chunks):
            meta = stored.metadata
            assert (meta["start"], meta["end"], meta["chunkIndex"], meta["docId"], meta["_source"]) == (
                chunk.start, chunk.end, chunk.chunk_index, "first/a.md", "first/a.md")
            assert item.doc.text[meta["start"]:meta["end"]] == stored.content
        assert store.fingerprints(["first/a.md", "absent.md"]) == {
            "first/a.md": IndexedVersion("fp-alpha", len(item.chunks))}
        assert not store.is_empty() and store.count_chunks() >= len(item.chunks)

    def test_a_new_version_replaces_the_old_one_whole(self, store: ChunkStore) -> None:
        [old] = store.replace_documents([new_version("swap.md", text_of("oldtopic", 4), "fp-old")])
        item = new_version("swap.md", text_of("newtopic", 2), "fp-new")
        [new] = store.replace_documents([item])
        assert new.replaced is True and new.version != old.version
        assert {c.version for c in store.get_chunks("swap.md")} == {new.version}
        assert len(store.get_chunks("swap.md")) == len(item.chunks)
        assert store.fingerprints(["swap.md"])["swap.md"] == IndexedVersion("fp-new", len(item.chunks))
        only = {"doc_id": "swap.md"}
        assert {h.metadata["version"] for h in store.search_bm25("oldtopic newtopic paragraph", 50, only)} == {
            new.version}
        assert {h.metadata["version"] for h in store.search_dense(vector(item.chunks[0].text), 50, only)} == {
            new.version}

    def test_several_documents_in_one_batch(self, store: ChunkStore) -> None:
        items = [new_version(f"batch/{i}.md", text_of(f"topic{i}")) for i in range(3)]
        results = store.replace_documents(items)
        assert [r.replaced for r in results] == [False] * 3 and len({r.version for r in results}) == 3
        assert {d.doc_id for d in store.list_documents()} >= {"batch/0.md", "batch/1.md", "batch/2.md"}
        assert set(store.fingerprints(["batch/0.md", "batch/2.md"])) == {"batch/0.md", "batch/2.md"}

    @pytest.mark.parametrize("problem", ["twice", "fewer vectors", "no chunks", "wrong dimension"])
    def test_a_batch_that_cannot_be_written_whole_is_refused_and_writes_nothing(self, store: ChunkStore,
                                                                               problem: str) -> None:
        good = new_version(f"refused/{problem}.md", text_of("kept"))
        store.replace_documents([good])
        before = store.get_chunks(good.doc.doc_id)
        bad = new_version(good.doc.doc_id, text_of("never"))
        if problem == "twice":
            batch = [bad, bad]
        elif problem == "fewer vectors":
            batch = [NewVersion(bad.doc, bad.chunks, bad.vectors[:-1], "x")]
        elif problem == "no chunks":
            batch = [NewVersion(bad.doc, [], np.zeros((0, DIM), np.float32), "x")]
        else:
            batch = [NewVersion(bad.doc, bad.chunks, np.ones((len(bad.chunks), DIM + 1), np.float32), "x")]
        with pytest.raises(StoreError):
            store.replace_documents(batch)
        assert store.get_chunks(good.doc.doc_id) == before

    def test_search_both_is_both_searches_at_once(self, store: ChunkStore) -> None:
        items = [new_version(f"both/{name}.md", text_of(name)) for name in ("red", "green", "blue")]
        store.replace_documents(items)
        target = items[1].chunks[0].text
        for k, filters in ((5, {"doc_id": [i.doc.doc_id for i in items]}), (2, {"doc_id": "both/green.md"}),
                           (50, {"source": "both/blue.md"}), (5, {"doc_id": []}), (5, {"doc_id": "both/absent.md"})):
            dense, bm25 = store.search_both(vector(target), "green notes paragraph", k, filters)
            assert dense == store.search_dense(vector(target), k, filters)
            assert bm25 == store.search_bm25("green notes paragraph", k, filters)
        dense, bm25 = store.search_both(vector(target), "green", 5, {"doc_id": [i.doc.doc_id for i in items]})
        assert dense[0].content == target and {h.metadata["doc_id"] for h in bm25} == {"both/green.md"}
        assert all(h.channels == {"dense": (r, h.score)} for r, h in enumerate(dense, start=1))
        assert all(h.channels == {"bm25": (r, h.score)} for r, h in enumerate(bm25, start=1))

    def test_readers_never_see_zero_chunks_or_a_mix_of_versions(self, store: ChunkStore) -> None:
        store.replace_documents([new_version("busy.md", text_of("steady", 4))])
        stop, seen, errors = threading.Event(), [], []

        def reader() -> None:
            try:
                while not stop.is_set():
                    hits = store.search_bm25("steady paragraph", 100, {"doc_id": "busy.md"})
                    chunks = store.get_chunks("busy.md")
                    seen.append((len(hits), len({h.metadata["version"] for h in hits}), len(chunks),
                                 len({c.version for c in chunks})))
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        def hybrid_reader() -> None:  # both channels of one lookup: one version between them
            try:
                while not stop.is_set():
                    dense, bm25 = store.search_both(vector(text_of("steady", 2)), "steady paragraph", 100,
                                                    {"doc_id": "busy.md"})
                    both.append((len(dense), len(bm25), len({h.metadata["version"] for h in dense + bm25})))
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        both: list[tuple[int, int, int]] = []
        threads = [threading.Thread(target=reader), threading.Thread(target=hybrid_reader)]
        for thread in threads:
            thread.start()
        try:
            # Each reader has read once before the writes begin (a busy machine may start a thread late).
            deadline = time.monotonic() + 120
            while not (seen and both) and not errors and time.monotonic() < deadline:
                time.sleep(0.01)
            for i in range(4):
                store.replace_documents([new_version("busy.md", text_of("steady", 2 + 2 * (i % 2)), f"fp{i}")])
        finally:
            stop.set()
            for thread in threads:
                thread.join()
        assert not errors, [(type(e).__name__, getattr(e, 'code', None), str(e)) for e in errors]
        assert seen and both
        assert all(hits > 0 and versions == 1 and chunks > 0 and chunk_versions == 1
                   for hits, versions, chunks, chunk_versions in seen), seen[:10]
        assert all(dense > 0 and bm25 > 0 and versions == 1 for dense, bm25, versions in both), both[:10]

    # ------------------------------------------------------------------ kept originals
    def test_originals_are_kept_with_their_version(self, store: ChunkStore) -> None:
        store.replace_documents([new_version("orig/a.md", text_of("one"), original=b"bytes of one"),
                                 new_version("orig/text.md", text_of("two"))])  # indexed from text: none kept
        assert store.read_original("orig/a.md") == b"bytes of one"
        assert store.read_original("orig/text.md") is None and store.read_original("orig/absent.md") is None
        listed = {d.doc_id: d.has_original for d in store.list_documents() if d.doc_id.startswith("orig/")}
        assert listed == {"orig/a.md": True, "orig/text.md": False}
        assert store.fingerprints(["orig/a.md"])["orig/a.md"].has_original
        assert not store.fingerprints(["orig/text.md"])["orig/text.md"].has_original
        store.replace_documents([new_version("orig/a.md", text_of("one, edited"), original=b"bytes, edited")])
        assert store.read_original("orig/a.md") == b"bytes, edited"
        assert store.delete_document("orig/a.md") and store.read_original("orig/a.md") is None

    def test_a_document_and_a_folder_of_the_same_name_both_keep_their_originals(self, store: ChunkStore) -> None:
        store.replace_documents([new_version("same/a.md", text_of("file"), original=b"the file a.md"),
                                 new_version("same/a.md/b.md", text_of("inside"), original=b"the file a.md/b.md")])
        assert store.read_original("same/a.md") == b"the file a.md"
        assert store.read_original("same/a.md/b.md") == b"the file a.md/b.md"
        assert store.delete_document("same/a.md") and store.read_original("same/a.md/b.md") == b"the file a.md/b.md"

    # ------------------------------------------------------------------ disabled chunks
    def test_disabled_keys_are_the_chunks_disabled_on_the_text_they_hold(self, store: ChunkStore) -> None:
        """`disabled_keys` names the chunks a person disabled, as lookups leave them out; a disable made on other text
        (the document was re-uploaded changed) does not count, and one on the same text holds through a re-index."""
        from rag_core.kb.chunk_edits import set_disabled

        store.replace_documents([new_version("disabled/a.md", text_of("alpha"))])
        chunks = store.get_chunks("disabled/a.md")
        assert len(chunks) > 2 and store.disabled_keys(chunks) == set()
        set_disabled(store, "disabled/a.md#chunk-1", True)
        set_disabled(store, "disabled/a.md#chunk-2", True)
        set_disabled(store, "disabled/a.md#chunk-2", False)
        assert store.disabled_keys(store.get_chunks("disabled/a.md")) == {"disabled/a.md#chunk-1"}
        assert store.disabled_keys(chunks[:1]) == set()  # only among the chunks given
        store.replace_documents([new_version("disabled/a.md", text_of("alpha"), "fp-2")])  # the same text again
        assert store.disabled_keys(store.get_chunks("disabled/a.md")) == {"disabled/a.md#chunk-1"}
        store.replace_documents([new_version("disabled/a.md", text_of("beta"), "fp-3")])  # other text under the key
        assert store.disabled_keys(store.get_chunks("disabled/a.md")) == set()
        assert store.disabled_keys([]) == set()

    # ------------------------------------------------------------------ delete
    def test_delete_removes_exactly_the_named_document(self, store: ChunkStore) -> None:
        odd = [INJECTION, 'quote"d.md', "back\\slash.md", "it's.md", "中文/运维手册.md"]
        store.replace_documents([new_version(f"del/{name}", text_of("odd")) for name in odd]
                                + [new_version("del/keep.md", text_of("odd"))])
        assert store.delete_document(f"del/{INJECTION}") is True
        left = {d.doc_id for d in store.list_documents() if d.doc_id.startswith("del/")}
        assert left == {f"del/{name}" for name in odd[1:]} | {"del/keep.md"}
        for name in odd[1:]:
            assert store.delete_document(f"del/{name}") is True
            assert store.get_chunks(f"del/{name}") == []
        assert store.delete_document(f"del/{odd[1]}") is False  # already gone
        assert [d.doc_id for d in store.list_documents() if d.doc_id.startswith("del/")] == ["del/keep.md"]
        assert store.get_chunks("del/keep.md")

    # ------------------------------------------------------------------ search
    def test_dense_search_best_first_with_filters(self, store: ChunkStore) -> None:
        items = [new_version(f"dense/{name}.md", text_of(name)) for name in ("red", "green", "blue")]
        store.replace_documents(items)
        target = items[1].chunks[1]
        mine = {"doc_id": [i.doc.doc_id for i in items]}
        hits = store.search_dense(vector(target.text), 5, mine)
        assert 0 < len(hits) <= 5
        assert (hits[0].metadata["doc_id"], hits[0].metadata["chunk_index"]) == ("dense/green.md", 1)
        assert hits[0].score == pytest.approx(1.0, abs=1e-4) and hits[0].content == target.text
        self.assert_ranked(hits, "dense")
        only = store.search_dense(vector(target.text), 50, {"doc_id": "dense/red.md"})
        assert only and {h.metadata["doc_id"] for h in only} == {"dense/red.md"}
        assert len(only) == len(items[0].chunks)
        by_source = store.search_dense(vector(target.text), 50, {"source": ["dense/red.md", "dense/blue.md"]})
        assert {h.metadata["doc_id"] for h in by_source} == {"dense/red.md", "dense/blue.md"}
        assert store.search_dense(vector(target.text), 5, {"doc_id": 'dense/red.md" or doc_id != "'}) == []
        assert store.search_dense(vector(target.text), 5, {"doc_id": []}) == []  # allows nothing
        assert store.search_bm25("red green blue", 5, {"doc_id": []}) == []

    def test_bm25_search_best_first_matches_only(self, store: ChunkStore) -> None:
        items = [new_version("bm25/disk.md", "# Disk\n\nThe disk is full. Clean the disk logs.\n"),
                 new_version("bm25/cpu.md", "# CPU\n\nThe CPU is busy. Check the disk once.\n"),
                 new_version("bm25/zh.md", "# 内存\n\n内存泄漏时先看监控。\n")]
        store.replace_documents(items)
        mine = {"doc_id": [i.doc.doc_id for i in items]}
        hits = store.search_bm25("disk", 10, mine)
        assert [h.metadata["doc_id"] for h in hits] == ["bm25/disk.md", "bm25/cpu.md"]  # the zh one has no match
        self.assert_ranked(hits, "bm25")
        assert all(h.score > 0 for h in hits)
        assert store.search_bm25("disk", 1, mine)[0].metadata["doc_id"] == "bm25/disk.md"
        assert store.search_bm25("内存", 10, mine)[0].metadata["doc_id"] == "bm25/zh.md"
        assert store.search_bm25("disk", 10, {"doc_id": "bm25/cpu.md"})[0].metadata["doc_id"] == "bm25/cpu.md"
        assert store.search_bm25("zebra", 10, mine) == []

    def test_bm25_folds_traditional_and_simplified_chinese(self, store: ChunkStore) -> None:
        """BM25 folds Traditional Chinese to Simplified on both sides (text.fold): a Traditional chunk is found by
        a Simplified question and a Simplified one by a Traditional question (no question shares a character
        string with its chunk unfolded), and the hits keep their own text."""
        items = [new_version("fold/trad.md", "# 記憶體\n\n資料庫的記憶體使用率過高時，先檢查連線數與緩衝區設定。\n"),
                 new_version("fold/simp.md", "# 磁盘\n\n磁盘空间不足时，先清理旧的日志文件，再扩容卷。\n")]
        store.replace_documents(items)
        mine = {"doc_id": [i.doc.doc_id for i in items]}
        for question, doc_id, shown in (("记忆体过高 检查设定", "fold/trad.md", "記憶體"),
                                        ("连线数 缓冲区", "fold/trad.md", "緩衝區"),
                                        ("空間 擴容 舊日誌", "fold/simp.md", "日志"),
                                        ("擴容", "fold/simp.md", "扩容")):
            hits = store.search_bm25(question, 5, mine)
            assert [h.metadata["doc_id"] for h in hits] == [doc_id], question
            assert shown in hits[0].content and hits[0].content == store.get_chunks(doc_id)[0].content
            _, both = store.search_both(vector(question), question, 5, mine)
            assert [h.id for h in both] == [h.id for h in hits]

    def test_the_labels_filter_matches_each_rows_labels_exactly(self, store: ChunkStore) -> None:
        """Metadata filters (scope) reach the store as `labels`: one label of every key, compared as exact
        strings, so injection-shaped values stay values."""
        evil, odd = 'x" or 1==1 or "', 'a\\b"c] or [x'
        items = [replace(new_version("labels/ops/a.md", text_of("alpha")), labels={"team": ("sre", evil)}),
                 replace(new_version("labels/b.md", text_of("beta")), labels={"team": ("dba",), "q": (odd,)})]
        store.replace_documents(items)
        assert store.get_chunks("labels/b.md")[0].labels[:2] == ("folder=labels", "type=md")

        def found(*labels: str) -> list[str]:
            wanted = {"labels": list(labels)}
            dense, bm25 = store.search_both(vector("alpha"), "alpha beta", 50, wanted)
            assert {h.metadata["doc_id"] for h in dense} == {h.metadata["doc_id"] for h in bm25}
            return sorted({h.metadata["doc_id"] for h in bm25})

        both = ["labels/b.md", "labels/ops/a.md"]
        assert found("folder=labels") == both  # every parent folder is a label
        assert found("folder=labels/ops") == ["labels/ops/a.md"]
        assert found("team=sre", "team=dba", "folder=labels") == both  # one key: OR
        assert found("team=dba", "type=md") == ["labels/b.md"]  # different keys: AND
        assert found("team=sre", "q=" + odd) == []
        assert found("team=" + evil) == ["labels/ops/a.md"] and found("q=" + odd) == ["labels/b.md"]
        assert found("team=x") == found('team=" or "" == "') == found("team=sre\\") == []
        with pytest.raises(StoreError):
            store.search_bm25("alpha", 5, {"labels": ["no key"]})
        # rows re-derived from a labels file: tests/contracts/store_capabilities.py, LabelledStoreContract

    def test_hits_and_chunks_link_to_the_source_url_their_labels_name(self, store: ChunkStore) -> None:
        """A document tagged `source_url` (what a source's sync tags: scope.PROVENANCE_KEY) gives its hits and chunks
        `sourceUrl` in their metadata; one without it gives none."""
        url = "https://wiki.example.com/x?a=1&b=\"2\""
        store.replace_documents([replace(new_version("linked/a.md", text_of("gamma")), labels={"source_url": (url,)}),
                                 new_version("linked/b.md", text_of("delta"))])
        dense, bm25 = store.search_both(vector("gamma"), "gamma delta", 50, {"doc_id": ["linked/a.md", "linked/b.md"]})
        for hits in (dense, bm25):
            assert {h.metadata["doc_id"]: h.metadata.get("sourceUrl") for h in hits} == {"linked/a.md": url,
                                                                                          "linked/b.md": None}
        assert store.get_chunks("linked/a.md")[0].metadata["sourceUrl"] == url

    @pytest.mark.parametrize("bad", [{"metadata": "x"}, {"version": "x"}, {"doc_id": 3}, {"doc_id": [None]}])
    def test_bad_filters_are_refused(self, store: ChunkStore, bad: dict[str, Any]) -> None:
        store.replace_documents([new_version("filters.md", text_of("filters"))])
        with pytest.raises(StoreError):
            store.search_bm25("filters", 5, bad)
        with pytest.raises(StoreError):
            store.search_dense(vector("filters"), 5, bad)
        with pytest.raises(StoreError):
            store.search_both(vector("filters"), "filters", 5, bad)

    @staticmethod
    def assert_ranked(hits: list, channel: str) -> None:
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True)
        assert [h.channels[channel] for h in hits] == [(rank, h.score) for rank, h in enumerate(hits, start=1)]
        for h in hits:
            assert h.id and h.content and h.metadata["docId"] == h.metadata["doc_id"]
            assert isinstance(h.metadata["chunk_index"], int) and h.metadata["version"]

    # ------------------------------------------------------------------ failure and recovery
    def test_an_interrupted_write_leaves_the_old_version_and_recovery_cleans_up(self, store: ChunkStore,
                                                                                 monkeypatch) -> None:
        [old] = store.replace_documents([new_version("crash.md", text_of("before", 3), "fp-before", b"before")])
        with monkeypatch.context() as m:
            self.break_commit(store, m)
            with pytest.raises(InterruptedWrite):
                store.replace_documents([new_version("crash.md", text_of("after", 2), "fp-after", b"after")])
        assert [d.version for d in store.list_documents() if d.doc_id == "crash.md"] == [old.version]
        assert store.read_original("crash.md") == b"before"
        assert {c.version for c in store.get_chunks("crash.md")} == {old.version}
        assert store.fingerprints(["crash.md"])["crash.md"].fingerprint == "fp-before"
        hits = store.search_bm25("after before paragraph", 100, {"doc_id": "crash.md"})
        assert hits and {h.metadata["version"] for h in hits} == {old.version}
        # The unfinished write is this process's own and it is not writing any more, so recovery removes
        # it whoever else shares the store (another live writer's would be spared: rag_core.store.milvus.writers).
        assert store.recover() == 1
        assert store.recover() == 0
        assert store.read_original("crash.md") == b"before"
        [new] = store.replace_documents([new_version("crash.md", text_of("after", 2), "fp-after", b"after")])
        assert new.replaced and {c.version for c in store.get_chunks("crash.md")} == {new.version}
        assert store.read_original("crash.md") == b"after"

    def test_an_interrupted_first_version_is_invisible(self, store: ChunkStore, monkeypatch) -> None:
        with monkeypatch.context() as m:
            self.break_commit(store, m)
            with pytest.raises(InterruptedWrite):
                store.replace_documents([new_version("never.md", text_of("neverseen"))])
        assert "never.md" not in {d.doc_id for d in store.list_documents()}
        assert store.get_chunks("never.md") == [] and store.fingerprints(["never.md"]) == {}
        assert store.search_bm25("neverseen", 10, {"doc_id": "never.md"}) == []
        assert store.delete_document("never.md") is False

    def test_opening_with_another_embedder_is_refused(self, store: ChunkStore) -> None:
        store.replace_documents([new_version("embedder.md", text_of("embedder"))])
        with pytest.raises(StoreError, match=f"{DIM + 4}"):
            store.open("other:model", DIM + 4)
        store.open(EMBEDDER, DIM)  # the right one still opens it, with the data
        assert store.get_chunks("embedder.md")

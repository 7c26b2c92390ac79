"""The contracts of a ChunkStore's optional capabilities (rag_core.ports: EditingStore, EditableStore, LabelledStore,
SharedStore, BM25TermScorer), one mixin each, as haystack's `testing/document_store.py` tests a document store's
optional features with one class each. A test module adds a mixin to its adapter's ChunkStoreContract class for every
capability the adapter has (tests/store/test_store_contract.py: MilvusStore on Milvus Lite and through a server, and
the in-memory store all have every one), with the same `store` fixture: an opened store for `EMBEDDER`/`DIM`, shared
by the module (each test uses its own doc_ids).
"""

from __future__ import annotations

import threading
from dataclasses import replace

import numpy as np
import pytest

from rag_core.errors import StoreError
from rag_core.names import collections_of, upgrade_collection
from rag_core.ports import BM25TermScorer, EditableStore, EditingStore, LabelledStore, SharedStore, UpgradableStore
from rag_core.records import StoredChunk
from rag_core.store.edits import content_hash
from tests.contracts.store import DIM, EMBEDDER, new_version, text_of, vector

RARE = "quetzalcoatlus"  # a word no other test's text has


def _written(store: EditableStore, doc_id: str, topic: str, paragraphs: int = 3) -> list[StoredChunk]:
    store.replace_documents([new_version(doc_id, text_of(topic, paragraphs))])
    return store.get_chunks(doc_id)


class EditingStoreContract:
    """`lock` and `editing()`: what a change of the records kept beside the rows runs under."""

    def test_is_an_editing_store(self, store: EditingStore) -> None:
        assert isinstance(store, EditingStore)

    def test_the_lock_is_re_entrant_and_keeps_other_threads_out(self, store: EditingStore) -> None:
        entered = threading.Event()
        order: list[str] = []

        def other() -> None:
            with store.lock():
                order.append("other")
            entered.set()

        with store.lock(), store.lock():  # re-entrant in one thread
            thread = threading.Thread(target=other)
            thread.start()
            assert not entered.wait(0.2)
            order.append("holder")
        thread.join(10)
        assert order == ["holder", "other"]

    def test_the_records_share_the_store_s_lock(self, store: EditingStore) -> None:
        """Chunk edits and labels are changed under the knowledge base's one lock (files.FileLock)."""
        records = [*([store.edits] if isinstance(store, EditableStore) else []),
                   *([store.labels] if isinstance(store, LabelledStore) else [])]
        assert records
        for record in records:
            got = threading.Event()

            def take(lock=record.lock, got=got) -> None:
                with lock():
                    got.set()

            with store.lock():
                thread = threading.Thread(target=take)
                thread.start()
                assert not got.wait(0.2)  # it waits for the store's lock
            thread.join(10)
            assert got.is_set()

    def test_editing_names_a_writer(self, store: EditingStore) -> None:
        with store.editing() as writer:
            assert isinstance(writer, dict) and all(isinstance(k, str) and isinstance(v, str)
                                                    for k, v in writer.items())


class EditableStoreContract(EditingStoreContract):
    """Chunk edits (`edits`) and the rows they write: `rewrite_chunk`, `add_chunk`, and their recovery."""

    def test_is_an_editable_store(self, store: EditableStore) -> None:
        assert isinstance(store, EditableStore)
        assert store.edits.all() is not None

    def test_a_rewritten_row_keeps_its_identity_and_is_searched_as_written(self, store: EditableStore) -> None:
        chunks = _written(store, "cap/rewrite.md", "rewrite")
        target = chunks[1]
        content = f"The {RARE} flew over the rewritten paragraph."
        new_vector = vector(content)
        store.rewrite_chunk(target.id, content, new_vector, {**target.metadata, "edited": True})
        after = store.get_chunks("cap/rewrite.md")
        assert len(after) == len(chunks)
        [row] = [c for c in after if c.chunk_index == 1]
        assert (row.id, row.version, row.doc_id, row.content) == (target.id, target.version, "cap/rewrite.md",
                                                                    content)
        assert row.metadata["edited"] is True and row.labels == target.labels
        mine = {"doc_id": "cap/rewrite.md"}
        assert [h.id for h in store.search_bm25(RARE, 5, mine)] == [target.id]
        dense = store.search_dense(new_vector, 1, mine)
        assert dense[0].id == target.id and dense[0].score == pytest.approx(1.0, abs=1e-4)
        assert dense[0].content == content and dense[0].metadata["edited"] is True
        assert [d.chunks for d in store.list_documents() if d.doc_id == "cap/rewrite.md"] == [len(chunks)]

    def test_rewriting_a_row_it_does_not_hold_is_a_store_error(self, store: EditableStore) -> None:
        with pytest.raises(StoreError):
            store.rewrite_chunk("no-such-row", "text", vector("text"), {})

    def test_an_added_chunk_is_listed_in_order_searched_and_written_once(self, store: EditableStore) -> None:
        chunks = _written(store, "cap/add.md", "addition")
        total = store.count_chunks()
        base = chunks[0]
        metadata = {"docId": base.doc_id, "_source": base.source, "chunkIndex": len(chunks) + 1, "added": True,
                    "edited": True, "chunkHash": content_hash(f"An added {RARE} note.")}
        added = StoredChunk(id="", doc_id=base.doc_id, chunk_index=len(chunks) + 1, content=f"An added {RARE} note.",
                            source=base.source, title="", version=base.version, metadata=metadata, labels=base.labels)
        store.add_chunk(added, vector(added.content))
        store.add_chunk(added, vector(added.content))  # again (a retry after a crash): still one row
        after = store.get_chunks("cap/add.md")
        assert [c.chunk_index for c in after] == [*range(len(chunks)), len(chunks) + 1]
        [row] = [c for c in after if c.metadata.get("added")]
        assert row.id and row.version == base.version and row.content == added.content
        assert row.labels == base.labels
        # a gap is filled in chunk order
        store.add_chunk(replace(added, chunk_index=len(chunks), content="Between.",
                                metadata={**metadata, "chunkIndex": len(chunks)}), vector("Between."))
        assert [c.chunk_index for c in store.get_chunks("cap/add.md")] == list(range(len(chunks) + 2))
        mine = {"doc_id": "cap/add.md"}
        assert [h.id for h in store.search_bm25(RARE, 5, mine)] == [row.id]
        assert store.search_dense(vector(added.content), 1, mine)[0].id == row.id
        # what the document's version was written with is what is listed and counted
        assert [d.chunks for d in store.list_documents() if d.doc_id == "cap/add.md"] == [len(chunks)]
        assert store.fingerprints(["cap/add.md"])["cap/add.md"].chunks == len(chunks)
        assert store.count_chunks() == total

    def test_a_chunk_added_to_a_retired_version_is_never_seen(self, store: EditableStore) -> None:
        old = _written(store, "cap/retired.md", "retired")[0]
        _written(store, "cap/retired.md", "replacement")
        store.add_chunk(replace(old, id="", chunk_index=9, content=f"Late {RARE}."), vector("late"))
        assert 9 not in [c.chunk_index for c in store.get_chunks("cap/retired.md")]
        assert store.search_bm25(RARE, 5, {"doc_id": "cap/retired.md"}) == []

    def test_recovery_settles_the_pending_edits_of_writers_that_are_gone_and_spares_a_running_one(
            self, store: EditableStore) -> None:
        chunks = _written(store, "cap/pending.md", "pending")
        written, lost = chunks[0], chunks[1]
        keys = {c.chunk_index: f"cap/pending.md#chunk-{c.chunk_index}" for c in chunks}
        content = f"A finished {RARE} edit."

        def begin(chunk: StoredChunk, text: str, writer: dict[str, str]) -> None:
            store.edits.begin(keys[chunk.chunk_index], doc_id=chunk.doc_id, version=chunk.version,
                              chunk_hash=str(chunk.metadata["chunkHash"]), changes={"text": text}, what="edited",
                              who="test", content=text, writer=writer)

        with store.editing() as writer:
            begin(written, content, writer)
            store.rewrite_chunk(written.id, content, vector(content), dict(written.metadata))
            begin(lost, "never written", writer)
            store.recover()  # this process is writing: both are spared
            assert set(store.edits.pending()) == {keys[0], keys[1]}
        store.recover()  # the writer is done and left them: settled by what the rows hold
        assert store.edits.pending() == {}
        entries = store.edits.all()
        assert entries[keys[0]]["text"] == content and entries[keys[0]]["history"]
        assert keys[1] not in entries  # aborted: it made the entry alone


class LabelledStoreContract(EditingStoreContract):
    """Document labels (`labels`, the source of truth) and the rows following them: `relabel`, and its recovery."""

    def test_is_a_labelled_store(self, store: LabelledStore) -> None:
        assert isinstance(store, LabelledStore)

    def found(self, store: LabelledStore, *labels: str) -> list[str]:
        dense, bm25 = store.search_both(vector("relabel"), "relabel", 50, {"labels": list(labels)})
        return sorted({h.metadata["doc_id"] for h in dense} | {h.metadata["doc_id"] for h in bm25})

    def test_relabel_makes_the_rows_follow_the_labels(self, store: LabelledStore) -> None:
        odd = 'a\\b"c] or [x'
        items = [new_version("relabel/a.md", text_of("relabel")),
                 replace(new_version("relabel/b.md", text_of("relabel", 2)), labels={"q": (odd,)})]
        store.replace_documents(items)
        assert self.found(store, "folder=relabel", "squad=red") == []
        assert self.found(store, "q=" + odd) == ["relabel/b.md"]  # as written, the labels file has none
        store.labels.set_tags("relabel/b.md", {"squad": ["red"]})
        assert store.relabel(["relabel/b.md"]) == len(items[1].chunks)
        assert store.relabel(["relabel/b.md"]) == 0  # they follow already
        assert self.found(store, "folder=relabel", "squad=red") == ["relabel/b.md"]
        assert self.found(store, "q=" + odd) == []  # re-derived from the file, their source of truth
        assert all("squad=red" in c.labels for c in store.get_chunks("relabel/b.md"))
        store.labels.set_tags("relabel/b.md", {"squad": ["blue"]}, replace=True)
        store.relabel(["relabel/a.md", "relabel/b.md"])
        assert self.found(store, "squad=red") == [] and self.found(store, "squad=blue") == ["relabel/b.md"]
        assert store.labels.all()["relabel/b.md"] == {"squad": ("blue",)}

    def test_recovery_makes_the_rows_of_a_change_its_writer_left_follow(self, store: LabelledStore) -> None:
        store.replace_documents([new_version("relabel/left.md", text_of("relabel"))])
        with store.editing() as writer:
            store.labels.set_tags("relabel/left.md", {"owner": ["kim"]}, writer=writer)  # marked, rows not rewritten
            store.recover()
            assert self.found(store, "owner=kim") == []  # spared while its writer runs
        store.recover()
        assert self.found(store, "owner=kim") == ["relabel/left.md"]
        assert "relabel/left.md" not in store.labels.all() or store.labels.all()["relabel/left.md"] == {
            "owner": ("kim",)}


class SharedStoreContract:
    """`exclusive_access` and `drop` sparing what another knowledge base shares."""

    def test_is_a_shared_store(self, store: SharedStore) -> None:
        assert isinstance(store, SharedStore)
        assert isinstance(store.exclusive_access(), bool)

    def test_drop_spares_the_collections_named(self, store: SharedStore) -> None:
        store.replace_documents([new_version("spare/a.md", text_of("spare"), original=b"kept")])
        spared = list(collections_of(store.collection))  # what another knowledge base shares (kb.manage)
        assert store.drop(spared, originals=False) == spared[:2]  # the chunks and the registry
        assert store.read_original("spare/a.md") == b"kept" and store.get_chunks("spare/a.md")

    def test_drop_keeps_the_records_unless_the_originals_go(self, store: SharedStore) -> None:
        store.replace_documents([new_version("spare/b.md", text_of("spare"))])
        if not isinstance(store, LabelledStore):
            pytest.skip("keeps no labels")
        store.labels.set_tags("spare/b.md", {"team": ["sre"]})
        assert store.drop(originals=False) == []
        store.open(EMBEDDER, DIM)
        assert store.list_documents() == [] and store.labels.tags("spare/b.md") == {"team": ["sre"]}
        assert store.drop() == []
        store.open(EMBEDDER, DIM)
        assert store.labels.all() == {} and store.is_empty()


class UpgradableStoreContract:
    """An embedder upgrade's staging (ports.UpgradableStore; kb.upgrade runs the job): every chunk staged with the new
    embedder's vectors, a resumed staging kept, chunks changed or gone meanwhile staged again or removed, then the
    swap. The test swaps back to a staging for EMBEDDER, so the module's store stays as the other tests expect it."""

    def test_is_an_upgradable_store(self, store: UpgradableStore) -> None:
        assert isinstance(store, UpgradableStore)

    def test_stage_resume_follow_the_changes_and_swap(self, store: EditableStore) -> None:
        assert isinstance(store, UpgradableStore)
        store.replace_documents([new_version("upgrade/a.md", text_of("apricot")),
                                 new_version("upgrade/b.md", text_of("blueberry"))])
        mine = {c.id: c for d in ("upgrade/a.md", "upgrade/b.md") for c in store.get_chunks(d)}
        name = upgrade_collection(store.collection, "other")
        store.stage(name, "test:other", DIM)
        todo = dict(store.unstaged(name))
        assert set(mine) <= set(todo) and all(todo[i] == c.content for i, c in mine.items())

        def staged_vector(text: str) -> np.ndarray:
            return vector("other:" + text)  # the new embedder's vectors differ from EMBEDDER's

        first = sorted(todo)[: len(todo) // 2]
        assert store.put_staged(name, first, [staged_vector(todo[i]) for i in first]) == len(first)
        store.stage(name, "test:other", DIM)  # a job resumed: what was staged stays
        assert {i for i, _ in store.unstaged(name)} == set(todo) - set(first)
        assert store.put_staged(name, ["no-such-row"], [staged_vector("x")]) == 0  # gone meanwhile: skipped

        store.replace_documents([new_version("upgrade/b.md", text_of("cranberry"))])  # re-uploaded during the job
        store.delete_document("upgrade/a.md")
        left = dict(store.unstaged(name))
        assert not set(mine) & set(left)  # a's rows are gone, b's old version too: not staged again
        assert {c.id for c in store.get_chunks("upgrade/b.md")} <= set(left)
        assert store.put_staged(name, list(left), [staged_vector(t) for t in left.values()]) == len(left)
        assert store.unstaged(name) == []
        staged, live = store.staged_count(name)
        assert staged == live > 0  # every row staged

        old = store.swap_staged(name)
        assert store.chunks == name and store.embedder_name == "test:other" and old != name
        (b,) = store.get_chunks("upgrade/b.md")[:1]
        assert store.search_dense(staged_vector(b.content), 1)[0].id == b.id  # searched by the staged vectors
        with pytest.raises(StoreError):
            store.drop_chunks(name)  # the one in use
        store.drop_chunks(old)

        back = store.collection  # its own name again (free since `old` was dropped)
        store.stage(back, EMBEDDER, DIM)
        rows = store.unstaged(back)
        store.put_staged(back, [i for i, _ in rows], [vector(text) for _, text in rows])
        assert store.swap_staged(back) == name and (store.chunks, store.embedder_name) == (store.collection, EMBEDDER)
        store.drop_chunks(name)
        assert store.search_dense(vector(b.content), 1)[0].id == b.id


    def test_a_staging_with_other_bm25_words_keeps_the_vectors(self, store: EditableStore) -> None:
        """rag_core.dictionary: a dictionary term matches whole (its alias), a stop word is not counted."""
        assert isinstance(store, UpgradableStore) and isinstance(store, BM25TermScorer)
        store.replace_documents([new_version("words/a.md", "缓存预热 is the warmup step of zephyrctl caches"),
                                 new_version("words/b.md", "缓存 is a cache and 预热 a warmup, apart here")])
        a, b = store.get_chunks("words/a.md")[0], store.get_chunks("words/b.md")[0]

        def scores(query: str) -> dict[str, float]:
            return {h.id: h.score for h in store.search_bm25(query, 50) if h.id in (a.id, b.id)}

        before = scores("缓存预热")
        assert (store.bm25_terms, store.stop_words) == ((), ()) and set(before) == {a.id, b.id}
        own, name = store.chunks, upgrade_collection(store.collection, "words")
        store.stage(name, store.embedder_name, store.dim, dictionary=["缓存预热"], stop_words=["warmup"])
        todo = [i for i, _ in store.unstaged(name)]
        assert store.put_staged(name, todo) == len(todo)  # their own vectors: nothing embedded
        assert store.swap_staged(name) == own
        try:
            assert (store.bm25_terms, store.stop_words) == (("缓存预热",), ("warmup",))
            after = scores("缓存预热")
            assert after[a.id] > after[b.id] and after[a.id] - after[b.id] > before[a.id] - before[b.id]
            assert scores("warmup") == {}  # not counted at all
            assert store.search_dense(vector(a.content), 1)[0].id == a.id  # the same vectors
            alone = store.bm25_term_scores(["缓存预热"], [a.id, b.id])["缓存预热"]
            assert alone[a.id] > alone.get(b.id, 0.0)
        finally:  # back to the words the other tests expect, in the knowledge base's own collection
            store.drop_chunks(own)
            store.stage(own, store.embedder_name, store.dim, dictionary=(), stop_words=())
            store.put_staged(own, [i for i, _ in store.unstaged(own)])
            assert store.swap_staged(own) == name
            store.drop_chunks(name)
        assert (store.bm25_terms, store.stop_words) == ((), ()) and scores("缓存预热") == pytest.approx(before)


class BM25TermScorerContract:
    """`bm25_term_scores`: each term's BM25 score of the rows asked about that hold it, the parts of a search's
    score (retrieval.keywords)."""

    def test_is_a_bm25_term_scorer(self, store: BM25TermScorer) -> None:
        assert isinstance(store, BM25TermScorer)

    def test_each_terms_score_of_the_rows_asked_about_and_holding_it(self, store: EditableStore) -> None:
        assert isinstance(store, BM25TermScorer)
        store.replace_documents([new_version("terms/a.md", f"{RARE} pterosaur wingspan"),
                                 new_version("terms/b.md", "pterosaur fossils in Texas"),
                                 new_version("terms/c.md", f"{RARE} again, a {RARE}")])
        ids = {c.doc_id: c.id for d in ("terms/a.md", "terms/b.md", "terms/c.md") for c in store.get_chunks(d)}
        asked = [ids["terms/a.md"], ids["terms/b.md"]]
        scores = store.bm25_term_scores([RARE, "pterosaur", "zzzunheardof"], asked)
        assert set(scores[RARE]) == {ids["terms/a.md"]}  # c holds it too, but was not asked about
        assert set(scores["pterosaur"]) == set(asked) and scores["zzzunheardof"] == {}
        assert all(score > 0 for found in scores.values() for score in found.values())
        # the parts add up to the search's score of a row (each term once in the query)
        (hit,) = [h for h in store.search_bm25(f"{RARE} pterosaur", 10) if h.id == ids["terms/a.md"]]
        assert scores[RARE][hit.id] + scores["pterosaur"][hit.id] == pytest.approx(hit.score, rel=1e-3)
        assert store.bm25_term_scores([], asked) == {} and store.bm25_term_scores([RARE], []) == {}


__all__ = ["BM25TermScorerContract", "EditableStoreContract", "EditingStoreContract", "LabelledStoreContract",
           "SharedStoreContract", "UpgradableStoreContract"]

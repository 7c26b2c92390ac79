"""Concurrent searches of one shape share one Milvus request (store.milvus.coalesce): every caller gets exactly the
hits it would get alone, a lone caller never waits, and an error reaches only the caller it belongs to."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from rag_core.store import MilvusStore
from rag_core.store.milvus.coalesce import Coalescer
from tests.contracts.store import DIM, EMBEDDER, new_version, text_of, vector
from tests.store.clients import FailingClient

WAIT = 60  # seconds a test waits for threads to get where it holds them: generous, it returns as soon as they do
TOPICS = ["disk", "memory", "network", "latency", "database", "queue", "cache", "certificate", "backup", "kernel"]


class Recorder:
    """A batch function that records its batches and can hold the first one until released."""

    def __init__(self, hold_first: bool = False, fail_on: object = None) -> None:
        self.batches: list[tuple[object, list[object]]] = []
        self.started, self.release = threading.Event(), threading.Event()
        self.hold_first, self.fail_on = hold_first, fail_on
        self.lock = threading.Lock()

    def __call__(self, key, items):
        with self.lock:
            self.batches.append((key, list(items)))
            first = len(self.batches) == 1
        if first and self.hold_first:
            self.started.set()
            assert self.release.wait(WAIT)
        if self.fail_on in items:
            raise ValueError(f"bad item {self.fail_on!r}")
        return [(key, item) for item in items]


def run_while_first_is_held(coalescer: Coalescer, recorder: Recorder, calls: list[tuple[str, object]]) -> list:
    """The first call starts a batch and holds it; the others arrive meanwhile; then it is released."""
    with ThreadPoolExecutor(len(calls)) as pool:
        first = pool.submit(coalescer, *calls[0])
        assert recorder.started.wait(WAIT)
        rest = [pool.submit(coalescer, *call) for call in calls[1:]]
        deadline = time.monotonic() + WAIT
        while sum(len(s.queue) for s in coalescer._shapes.values()) < len(calls) - 1:
            assert time.monotonic() < deadline, "the callers did not queue"
            time.sleep(0.005)
        recorder.release.set()
        futures = [first, *rest]
        return [f.exception() or f.result() for f in futures]


def test_a_lone_caller_runs_at_once_in_a_batch_of_its_own() -> None:
    recorder = Recorder()
    coalescer = Coalescer(recorder)
    assert coalescer("k", 1) == ("k", 1)
    assert coalescer("k", 2) == ("k", 2)
    assert recorder.batches == [("k", [1]), ("k", [2])]
    assert coalescer._shapes == {}  # nothing left behind


def test_callers_arriving_while_a_batch_runs_go_together_in_the_next_and_each_gets_its_own_result() -> None:
    recorder = Recorder(hold_first=True)
    coalescer = Coalescer(recorder)
    results = run_while_first_is_held(coalescer, recorder, [("k", i) for i in range(6)])
    assert results == [("k", i) for i in range(6)]
    assert recorder.batches[0] == ("k", [0])
    assert sorted(recorder.batches[1][1]) == [1, 2, 3, 4, 5] and len(recorder.batches) == 2


def test_searches_of_other_shapes_neither_wait_for_nor_join_each_other() -> None:
    recorder = Recorder(hold_first=True)
    coalescer = Coalescer(recorder)
    with ThreadPoolExecutor(4) as pool:
        held = pool.submit(coalescer, "a", 0)
        assert recorder.started.wait(WAIT)
        assert pool.submit(coalescer, "b", 1).result(timeout=WAIT) == ("b", 1)  # not behind shape a's batch
        assert pool.submit(coalescer, "b", 2).result(timeout=WAIT) == ("b", 2)
        recorder.release.set()
        assert held.result(timeout=WAIT) == ("a", 0)
    assert recorder.batches == [("a", [0]), ("b", [1]), ("b", [2])]


def test_a_batch_holds_at_most_max_batch_callers() -> None:
    recorder = Recorder(hold_first=True)
    coalescer = Coalescer(recorder, max_batch=3)
    results = run_while_first_is_held(coalescer, recorder, [("k", i) for i in range(8)])
    assert results == [("k", i) for i in range(8)]
    assert max(len(items) for _, items in recorder.batches) == 3
    assert sorted(i for _, items in recorder.batches for i in items) == list(range(8))


def test_an_error_reaches_only_the_caller_it_belongs_to() -> None:
    recorder = Recorder(hold_first=True, fail_on=3)
    coalescer = Coalescer(recorder)
    results = run_while_first_is_held(coalescer, recorder, [("k", i) for i in range(5)])
    assert [r for i, r in enumerate(results) if i != 3] == [("k", i) for i in (0, 1, 2, 4)]
    assert isinstance(results[3], ValueError) and "bad item 3" in str(results[3])
    # the failed batch of four, then each of its callers alone
    assert [items for _, items in recorder.batches[2:]] == [[i] for i in recorder.batches[1][1]]


def test_many_threads_many_shapes_every_caller_answered() -> None:
    def run(key, items):
        time.sleep(0.001)
        return [(key, item) for item in items]

    coalescer = Coalescer(run)
    calls = [(f"k{i % 3}", i) for i in range(300)]
    with ThreadPoolExecutor(16) as pool:
        assert list(pool.map(lambda call: coalescer(*call), calls)) == calls
    assert coalescer._shapes == {}


# --- on Milvus Lite: the hits of a coalesced search are those of the same search alone ---


@pytest.fixture(scope="module")
def store(tmp_path_factory, milvus):
    store = MilvusStore(str(Path(tmp_path_factory.mktemp("coalesce")) / "milvus.db"), "coalesce")
    store.open(EMBEDDER, DIM)
    store.replace_documents([new_version(f"docs/{topic}.md", text_of(topic, 6)) for topic in TOPICS])
    yield store
    store.close()


def hit_keys(hits) -> list[tuple]:
    return [(h.id, h.score, h.content, dict(h.metadata), dict(h.channels)) for h in hits]


def test_concurrent_hybrid_searches_get_exactly_their_hits_alone(store: MilvusStore, monkeypatch) -> None:
    queries = [f"{topic} notes paragraph {i}" for i, topic in enumerate(TOPICS + TOPICS[:3])]
    alone = {q: store.search_both(vector(q), q, 5) for q in queries}
    assert all(dense and bm25 for dense, bm25 in alone.values())

    sizes: list[int] = []
    gate = threading.Event()

    def observed(search, collection, **kwargs):
        sizes.append(len(kwargs["data"]))
        if len(sizes) == 1:
            assert gate.wait(WAIT)  # hold the first request until the others queue behind it
        return search(collection, **kwargs)

    monkeypatch.setattr(store, "client", FailingClient(store.client, "search", observed))
    with ThreadPoolExecutor(len(queries)) as pool:
        futures = [pool.submit(store.search_both, vector(q), q, 5) for q in queries]
        deadline = time.monotonic() + WAIT
        while sum(len(s.queue) for s in store.searcher._coalesce._shapes.values()) < len(queries) - 1:
            assert time.monotonic() < deadline, "the searches did not queue"
            time.sleep(0.005)
        gate.set()
        together = {q: f.result() for q, f in zip(queries, futures)}
    assert max(sizes) == len(queries) - 1  # every other search shared one request per channel
    for q in queries:
        assert [hit_keys(hits) for hits in together[q]] == [hit_keys(hits) for hits in alone[q]], q


def test_searches_with_other_filters_or_windows_are_not_batched_together(store: MilvusStore, monkeypatch) -> None:
    shapes: list[tuple] = []
    real = store.searcher._search_batch

    def observed(shape, items):
        shapes.append((shape, len(items)))
        return real(shape, items)

    monkeypatch.setattr(store.searcher._coalesce, "_run", observed)
    q = "disk notes"
    assert store.search_dense(vector(q), 3, {"doc_id": ["docs/disk.md"]})
    assert store.search_dense(vector(q), 4)
    assert store.search_bm25(q, 3)
    assert len({shape for shape, _ in shapes}) == 3

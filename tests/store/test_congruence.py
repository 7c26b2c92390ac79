"""Congruence of the two ChunkStores (as qdrant-client's `tests/congruence_tests/` compare its local mode with the
server): the same sequence of writes through the code people use (ingest, re-upload, delete, chunk edits: disable,
edit, add, keep a conflict; tags) on MilvusStore over Milvus Lite and on the in-memory store, and after each step
the same lookups on both, compared.

What is compared, and how closely:
- dense hits (StoreSearchPort with the real local embedder, cosine of the same vectors): the same evidence keys in
  the same order, scores equal to 1e-4 (float32 on both sides), with and without filters (`doc_id`, `source`,
  `labels`). (A hashed-trigram embedder gives many chunks the same score, whose order each store breaks its own
  way: the real one gives none.);
- the lookup path's answers in dense mode (KnowledgeRetriever.lookup: evidence, every drop and its reason, metadata
  filters by labels): the same, scores to 1e-4;
- BM25: the same chunks match (as a set), and the same best hit where one chunk scores clearly best. Scores and
  the order of the rest are not comparable: Milvus analyses text with jieba, lowercasing, an English stemmer and
  stop words (store.milvus.schema.ANALYZER), the in-memory store with words and single CJK characters, none
  dropped or stemmed, so term statistics differ ("the" is a term in memory only; "files" and "file" are one term in
  Milvus only) and Milvus orders tied scores its own way. The queries use content words, which match the same
  chunks in both;
- hybrid with rrf fusion, whose scores come from ranks only: the same order where BM25 ranked the same chunks in
  the same order (queries with one BM25 match);
- what the stores keep: documents listed (chunk counts, hashes, kept originals), chunks (text, flags, labels), the
  chunk edits with their history, conflicts, and the labels; not row ids or versions, which each store makes its
  own (versions are random), so hits are compared by evidence key (`doc_id#chunk-N`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rag_core.ingest import Ingestor
from rag_core.kb import chunk_edits
from rag_core.kb.tags import metadata, tag
from rag_core.ports import Embedder, KnowledgeStore
from rag_core.records import SearchHit, SearchOptions
from rag_core.retrieval import KnowledgeRetriever, LookupParams, StoreSearchPort
from rag_core.retrieval.scope import parse_scope
from rag_core.store import MilvusStore
from rag_core.store.memory import InMemoryChunkStore

DOCS = {
    "ops/disk.md": "---\nteam: sre\n---\n# Disk full\n\nWhen the disk usage alert DiskSpaceLow fires, delete old log "
                   "files under /var/log and rotate them with logrotate.\n\nFind the largest folders with du and "
                   "remove core dumps left by crashed daemons.\n",
    "ops/cpu.md": "# CPU high\n\nHighCPUUsage means a process keeps the processor busy; find it with top and "
                  "profile it before restarting the service.\n\nA runaway cron job often keeps the processor "
                  "busy at night.\n",
    "zh/内存.md": "# 内存泄漏\n\n内存泄漏时先用 jmap 导出堆转储，再分析哪些对象没有被回收。\n\n"
                 "重启服务只能暂时缓解内存问题。\n",
    "lab/tank.md": "\n\n".join(f"Section {i}. The zebrafish hatchery keeps tank {i} at a steady temperature; the "
                                f"filter pump of tank {i} is cleaned every {i + 2} days." for i in range(5)),
    "notes.txt": "Quartz watches drift a few seconds a month; the chronometer on the wall is set by radio.\n",
}
CHANGED_DISK = DOCS["ops/disk.md"].replace("remove core dumps left by crashed daemons",
                                           "archive core dumps to the bucket before deleting them")
DENSE = ("disk log files", "tank filter pump temperature", "内存 堆转储", "busy processor", "quartz watch drift",
         "chronometer radio", "an added note about the pager")
BM25 = ("logrotate", "zebrafish hatchery", "jmap", "HighCPUUsage", "chronometer", "pager")
ONE_MATCH = ("logrotate", "jmap", "HighCPUUsage", "chronometer", "pager")  # BM25 finds one chunk
FILTERS: tuple[dict[str, Any] | None, ...] = (
    None, {"doc_id": "lab/tank.md"}, {"source": ["ops/disk.md", "ops/cpu.md"]}, {"labels": ["folder=ops"]},
    {"labels": ["type=txt", "type=md"]}, {"labels": ["team=sre"]}, {"doc_id": []})
SCOPES = (["folder=ops"], ["team=sre"], ["type=txt"], ["folder=lab", "folder=zh"])


@dataclass
class Side:
    name: str
    store: KnowledgeStore
    embedder: Embedder

    @property
    def ingestor(self) -> Ingestor:
        return Ingestor(self.store, self.embedder, max_size=160, overlap=0)

    def port(self, mode: str, fusion: str = "rrf") -> StoreSearchPort:
        return StoreSearchPort(self.store, self.embedder, SearchOptions(mode=mode, fusion=fusion))

    @property
    def retriever(self) -> KnowledgeRetriever:
        params = LookupParams(retrieve_k=12, return_n=4, max_chunks_per_document=2, search=SearchOptions(mode="dense"))
        return KnowledgeRetriever(self.port("dense"), params)


@pytest.fixture(scope="module")
def sides(tmp_path_factory, milvus, local_embedder) -> list[Side]:
    folder = Path(tmp_path_factory.mktemp("congruence"))
    embedder = local_embedder
    lite = MilvusStore(str(folder / "milvus.db"), "congruence", originals=folder / "originals" / "congruence")
    memory = InMemoryChunkStore("congruence")
    for store in (lite, memory):
        store.open(embedder.name, embedder.dim)
    yield [Side("milvus-lite", lite, embedder), Side("memory", memory, embedder)]
    lite.close()


def key(hit: SearchHit) -> str:
    return f"{hit.metadata['doc_id']}#chunk-{hit.metadata['chunk_index']}"


def on_both(sides: list[Side], do: Callable[[Side], Any]) -> Any:
    """`do` on each side; their answers must be equal, floats to 1e-4 (the first one's returned)."""
    lite, memory = (do(side) for side in sides)
    assert _exact(lite) == _exact(memory), f"milvus-lite answered\n{lite}\nthe in-memory store\n{memory}"
    assert _floats(lite) == pytest.approx(_floats(memory), abs=1e-4), (lite, memory)
    return lite


def _exact(value: Any) -> Any:
    """`value` with its floats left out (compared by `_floats`)."""
    if isinstance(value, float):
        return float
    if isinstance(value, dict):
        return {k: _exact(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_exact(v) for v in value]
    return value


def _floats(value: Any) -> list[float]:
    if isinstance(value, float):
        return [value]
    if isinstance(value, dict):
        return [f for k in sorted(value, key=str) for f in _floats(value[k])]
    if isinstance(value, (list, tuple)):
        return [f for v in value for f in _floats(v)]
    return []


def check_lookups(sides: list[Side]) -> None:
    """Every lookup of the module docstring on both sides."""
    for query in DENSE:
        for filters in FILTERS:
            lite, memory = ([(key(h), h.score) for h in side.port("dense").search(query, 12, filters).hits]
                            for side in sides)
            assert [k for k, _ in lite] == [k for k, _ in memory], (query, filters)
            assert [s for _, s in lite] == pytest.approx([s for _, s in memory], abs=1e-4), (query, filters)
    for query in BM25:
        for filters in FILTERS:
            lite, memory = ([key(h) for h in side.port("bm25").search(query, 12, filters).hits] for side in sides)
            assert set(lite) == set(memory), (query, filters)
            if query in ONE_MATCH:
                assert lite == memory, (query, filters)
                hybrid = [[key(h) for h in side.port("hybrid").search(query, 12, filters).hits] for side in sides]
                assert hybrid[0] == hybrid[1], (query, filters)
    for query in DENSE:
        on_both(sides, lambda side, q=query: answer(side.retriever.lookup(q)))
        for scope in SCOPES:
            on_both(sides, lambda side, q=query, s=scope: answer(side.retriever.lookup(q, scope=parse_scope(s))))


def answer(result: Any) -> tuple[Any, ...]:
    """A lookup's evidence and every drop with its reason."""
    return (tuple((c.evidence_key, c.score) for c in result.post.evidence),
            tuple((t.evidence_key, t.drop.kind) for t in result.post.dropped))


def kept(side: Side) -> dict[str, Any]:
    """What the store keeps, without what each store makes its own (row ids, versions, the times of writes)."""
    store = side.store
    docs = {d.doc_id: (d.chunks, d.content_hash, d.has_original, d.file_name) for d in store.list_documents()}
    flags = ("chunkHash", "edited", "added", "keywords", "questions", "originalText", "title")
    chunks = {d: [(c.chunk_index, c.content, [label for label in c.labels if not label.startswith("ingested=")],
                   {k: c.metadata.get(k) for k in flags}) for c in store.get_chunks(d)] for d in docs}
    edits = {k: {**{n: v for n, v in e.items() if n not in ("version", "history", "pending")},
                 "history": [h["what"] for h in e.get("history", [])]} for k, e in store.edits.all().items()}
    return {"documents": docs, "chunks": chunks, "count": store.count_chunks(), "edits": edits,
            "labels": store.labels.all(), "metadata": {d: {k: v for k, v in m.items() if k != "ingested"}
                                                       for d, m in metadata(store).items()}}


def step(sides: list[Side], do: Callable[[Side], Any]) -> Any:
    """One write on both sides: the same answer, the same state kept, the same lookups."""
    done = on_both(sides, do)
    on_both(sides, kept)
    check_lookups(sides)
    return done


def test_the_same_writes_give_the_same_hits_on_milvus_lite_and_in_memory(sides: list[Side]) -> None:
    def reports(found: list[Any]) -> list[tuple[str, str, int]]:
        return [(r.doc_id, r.status, r.chunks) for r in found]

    uploads = [(doc_id, text.encode()) for doc_id, text in DOCS.items()]
    first = step(sides, lambda s: reports(s.ingestor.ingest_uploads(uploads)))
    assert [(doc_id, status) for doc_id, status, _ in first] == [(doc_id, "added") for doc_id in DOCS]
    # unchanged again: nothing written
    assert {status for _, status, _ in step(sides, lambda s: reports(s.ingestor.ingest_uploads(uploads)))} == {
        "unchanged"}

    # disable a chunk: the lookup drops it with reason `disabled`
    step(sides, lambda s: chunk_edits.set_disabled(s.store, "ops/cpu.md#chunk-1", True)["disabled"])
    lookup = on_both(sides, lambda s: answer(s.retriever.lookup("runaway cron job processor")))
    assert ("ops/cpu.md#chunk-1", "disabled") in lookup[1]

    # edit a chunk's text, keywords and questions; add a chunk
    step(sides, lambda s: chunk_edits.edit_chunk(s.store, s.embedder, "lab/tank.md#chunk-2",
                                                 text="Tank 2 is drained for repairs; the zebrafish moved to tank 3.",
                                                 keywords=["drained"], questions=["Where are the fish of tank 2?"],
                                                 who="tester")["evidence_key"])
    step(sides, lambda s: chunk_edits.add_chunk(s.store, s.embedder, "notes.txt",
                                                "An added note about the pager rotation.", who="tester")
         ["evidence_key"])

    # tags: the rows follow (relabel), metadata filters find the document by them
    step(sides, lambda s: tag(s.store, "notes.txt", ["team=sre", "owner=kim"]))
    assert "notes.txt" in on_both(sides, lambda s: [e[0].split("#")[0] for e in answer(
        s.retriever.lookup("quartz watch", scope=parse_scope(["team=sre"])))[0]])

    # a changed re-upload: a new version, the edits re-applied where their chunk holds the same text, conflicts listed
    [replaced] = step(sides, lambda s: reports(s.ingestor.ingest_uploads([("ops/disk.md", CHANGED_DISK.encode())])))
    assert replaced[1] == "replaced"
    step(sides, lambda s: chunk_edits.set_disabled(s.store, "ops/disk.md#chunk-2", True)["disabled"])
    changed = CHANGED_DISK.replace("bucket", "cold bucket")
    step(sides, lambda s: reports(s.ingestor.ingest_uploads([("ops/disk.md", changed.encode())])))
    conflicts = on_both(sides, lambda s: chunk_edits.conflicts(s.store, "ops/disk.md"))
    assert [c["evidence_key"] for c in conflicts] == ["ops/disk.md#chunk-2"]
    step(sides, lambda s: chunk_edits.keep(s.store, s.embedder, "ops/disk.md#chunk-2")["evidence_key"])

    # re-index everything from the kept originals: the edits and the added chunk come back
    step(sides, lambda s: reports(s.ingestor.reindex()))

    # delete a document with its edits and labels
    step(sides, lambda s: s.ingestor.delete("notes.txt"))
    assert "notes.txt" not in on_both(sides, lambda s: [d.doc_id for d in s.store.list_documents()])

"""Hits read fewer columns than a row has (store.milvus.search.SEARCH_FIELDS), and every lookup is the same as when
a hit read every column: the evidence (ids, scores to 6 decimals, ranks), the debugger's raw hits and explain's
answer, in dense, BM25 and hybrid mode, on a real knowledge base (Milvus Lite, the local embedder) with an edited
and an added chunk (their metadata are rewritten, not made by the ingest)."""

from __future__ import annotations

import pytest

from rag_core.kb.chunk_edits import add_chunk, edit_chunk
from rag_core.retrieval.explain import explain_dict
from rag_core.store.milvus import search
from rag_core.store.milvus.schema import CHUNK_FIELDS
from tests.helpers import indexed_workbench

pytestmark = pytest.mark.milvus  # opens Milvus Lite

EVERY_COLUMN = [name for name in CHUNK_FIELDS if name not in ("id", "labels")]  # what hits read before issue 28
QUERIES = ["cpu usage high", "磁盘满了怎么办", "payment gateway timeout", "how do I roll back a release",
           "zebrafrobnicate", "慢查询 索引"]


@pytest.fixture(scope="module")
def wb(tmp_path_factory):
    wb = indexed_workbench(tmp_path_factory.mktemp("fields"))
    edit_chunk(wb.store, wb.embedder, "runbooks/cpu_high.md#chunk-1", text="Throttled pods: raise the CPU limit.",
               keywords=["zebrafrobnicate"])
    add_chunk(wb.store, wb.embedder, "runbooks/disk_full.md", "A step of my own: page the owner when the disk is full.")
    try:
        yield wb
    finally:
        wb.close()


def answers(wb, mode: str) -> list[dict]:
    out = []
    for query in QUERIES:
        found = wb.retriever.lookup(query, search=type(wb.retriever.defaults.search)(mode=mode))
        out.append({k: v for k, v in found.to_dict().items() if k != "timings"})
    return out


def with_every_column(monkeypatch, fn):
    with monkeypatch.context() as patch:
        patch.setattr(search, "SEARCH_FIELDS", EVERY_COLUMN)
        return fn()


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_lookups_are_the_same_as_with_every_column(wb, mode, monkeypatch):
    assert set(search.SEARCH_FIELDS) < set(EVERY_COLUMN)
    new, old = answers(wb, mode), with_every_column(monkeypatch, lambda: answers(wb, mode))
    assert any(item["evidence"] for item in new)
    assert any(hit["edited"] for item in new for hit in item["raw_hits"])  # the edited chunk is among the hits
    for fresh, before in zip(new, old, strict=True):
        key = lambda item: [(e["evidence_key"], e["rank"], round(e["score"], 6)) for e in item["evidence"]]  # noqa: E731
        assert key(fresh) == key(before)
        assert fresh["raw_hits"] == before["raw_hits"]  # the debugger's raw hits: fates, channels, titles, text
        assert fresh == before


def test_the_added_chunk_and_explain_are_the_same_as_with_every_column(wb, monkeypatch):
    query = "page the owner when the disk is full"
    new = wb.retriever.lookup(query).to_dict()
    old = with_every_column(monkeypatch, lambda: wb.retriever.lookup(query).to_dict())
    assert any(hit["added"] for hit in new["raw_hits"]) and new["raw_hits"] == old["raw_hits"]
    hits = wb.store.search_bm25(query, 5)
    old_hits = with_every_column(monkeypatch, lambda: wb.store.search_bm25(query, 5))
    assert hits == old_hits and all(h.metadata["chunk_index"] == h.metadata["chunkIndex"] for h in hits)
    explained = lambda: explain_dict(wb, "disk is full", "runbooks/disk_full.md")  # noqa: E731
    assert explained() == with_every_column(monkeypatch, explained)

"""Every scenario of rag-chunk-evidence-identity.spec.md, end to end on Milvus Lite + the local embedder, with each
expansion (`expand`: none, neighbours, parent; merge on). Where the merge stage puts neighbouring hits of one
document into one block, a scenario counts the hits a block lists (`matched`) and reads the block keys: the spec's
rule (two chunks of one document are never deduplicated because they share a source) holds either way."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rag_core.errors import RetrievalError
from rag_core.identity import key_range
from rag_core.records import SearchHit
from rag_core.retrieval import KnowledgeRetriever, SearchOptions, StoreSearchPort
from rag_core.retrieval.expand import EXPAND_MODES, ExpandParams
from rag_core.retrieval.params import LookupParams
from rag_core.retrieval.retriever import DEFAULTS
from tests.retrieval.fakes import ScriptedPort, SpyPort


@pytest.fixture(params=EXPAND_MODES)
def expand(request) -> ExpandParams:
    """The lookups' expansion (the merge stage on, its default)."""
    return ExpandParams(request.param)


@pytest.fixture
def retriever_of(expand):
    """A retriever over a port (or a workbench's: its defaults too) whose lookups expand as `expand` says."""
    def make(over, defaults: LookupParams = DEFAULTS) -> KnowledgeRetriever:
        if isinstance(over, KnowledgeRetriever):
            over, defaults = over.port, over.defaults
        return KnowledgeRetriever(over, replace(defaults, expand=expand))
    return make


def matched_chunks(result) -> dict[str, list[int]]:
    """doc_id -> the chunk indexes of the hits its evidence blocks list, in block order."""
    out: dict[str, list[int]] = {}
    for block in result.blocks:
        for key in block.matched:
            doc, first, _ = key_range(key)
            out.setdefault(doc, []).append(first)
    return out


def dense_port(wb) -> StoreSearchPort:
    return StoreSearchPort(wb.store, wb.embedder, SearchOptions(mode="dense"))


def test_identity_extracted_from_metadata(sample_wb, retriever_of) -> None:
    result = retriever_of(dense_port(sample_wb)).lookup("How do I handle high CPU usage?",
                                                              search=SearchOptions(mode="dense"))
    assert result.candidates
    for c in result.candidates:
        assert c.metadata["docId"] == c.doc_id and c.metadata["chunkIndex"] == c.chunk_index
        assert c.evidence_key == f"{c.doc_id}#chunk-{c.chunk_index}"


def test_fallback_identity_without_chunk_index(retriever_of) -> None:
    hits = [SearchHit(id="449", score=0.9, content="x", metadata={"docId": "docA"})]
    result = retriever_of(ScriptedPort(hits)).lookup("q", search=SearchOptions(mode="dense"))
    assert result.evidence_keys == ["vector:449"]


def test_same_document_different_chunks_are_kept(sample_wb, retriever_of) -> None:
    retriever = retriever_of(dense_port(sample_wb))
    result = retriever.lookup("incident commander roles responsibilities communications lead scribe",
                              search=SearchOptions(mode="dense"), retrieve_k=30, return_n=10,
                              max_chunks_per_document=3)
    per_doc = matched_chunks(result)  # a merged block lists each of its hits
    multi = {d: c for d, c in per_doc.items() if len(c) > 1}
    assert multi, per_doc  # some document contributes several distinct chunks
    for chunks in multi.values():
        assert len(set(chunks)) == len(chunks)
    for a in result.blocks:  # two blocks of one document stay two when their chunks do not touch
        for b in result.blocks:
            if a is not b and a.doc_id == b.doc_id:
                assert a.last + 1 < b.first or b.last + 1 < a.first  # type: ignore[operator]


def test_true_duplicate_keys_merge_without_replacing_higher_ranked_content(retriever_of) -> None:
    meta = {"docId": "docA", "chunkIndex": 2}
    hits = [SearchHit(id="1", score=0.9, content="higher", metadata=meta, channels={"dense": (1, 0.9)}),
            SearchHit(id="2", score=0.8, content="other", metadata={"docId": "docB", "chunkIndex": 0}),
            SearchHit(id="3", score=0.7, content="lower", metadata=meta, channels={"bm25": (1, 7.0)})]
    result = retriever_of(ScriptedPort(hits)).lookup("q", search=SearchOptions(mode="dense"))
    assert result.evidence_keys == ["docA#chunk-2", "docB#chunk-0"]
    assert result.evidence[0].content == "higher" and result.evidence[0].hit_reasons == ("dense", "bm25")
    assert result.to_dict()["dropped"] == [{"evidence_key": "docA#chunk-2", "reason": "duplicate_of docA#chunk-2",
                                            "rank": 3, "drop": {"kind": "duplicate", "key": "docA#chunk-2",
                                                                "doc_id": None, "count": 0, "by": ["docA#chunk-2"]}}]


@pytest.mark.parametrize("cap", [1, 2, 3])
def test_excess_chunks_from_one_document_are_dropped(sample_wb, cap: int, retriever_of) -> None:
    retriever = retriever_of(dense_port(sample_wb))
    result = retriever.lookup("向量检索 召回 分块", search=SearchOptions(mode="dense"), retrieve_k=40,
                              return_n=40, max_chunks_per_document=cap)
    counts: dict[str, int] = {}
    for block in result.evidence:
        counts[block.doc_id] = counts.get(block.doc_id, 0) + 1
    assert max(counts.values()) <= cap
    top = [c for c in result.candidates if c.doc_id == "product/vector_search_zh.md"]
    assert len(top) > cap  # the scenario really happens: more than N chunks of one document were ranked
    # the top N by ranking remain: as evidence, or merged into a better one's block
    kept = sorted(t.rank for t in result.traces if t.doc_id == "product/vector_search_zh.md"
                  and (t.status == "kept" or t.status.startswith("merged_into ")))
    assert kept == [c.rank for c in top[:cap]]
    assert sum(len(b.matched) for b in result.blocks if b.doc_id == "product/vector_search_zh.md") == cap
    assert all(t.status == f"doc_cap (product/vector_search_zh.md already has {cap})"
               for t in result.traces if t.rank in {c.rank for c in top[cap:]})


def test_retrieve_k_widens_recall_without_unbounded_return(sample_wb, retriever_of) -> None:
    spy = SpyPort(dense_port(sample_wb))
    result = retriever_of(spy).lookup("disk full", search=SearchOptions(mode="dense"), retrieve_k=20, return_n=5)
    assert spy.asked == [20]
    assert len(result.candidates) == 20 and len(result.evidence) <= 5


def test_same_source_different_evidence_keys_both_project(sample_wb, retriever_of) -> None:
    result = retriever_of(dense_port(sample_wb)).lookup(
        "incident severity levels", search=SearchOptions(mode="dense"), retrieve_k=20, return_n=6,
        max_chunks_per_document=3)
    held: dict[str, list[str]] = {}  # source -> the evidence keys its items hold (a merged block: each of its hits)
    for p in result.projection.items:
        held.setdefault(p.source, []).extend(p.matched or (p.document_id,))
    dup_sources = {s for s, keys in held.items() if len(keys) > 1}
    assert dup_sources
    for source in dup_sources:
        ids = [p.document_id for p in result.projection.items if p.source == source]
        assert len(ids) == len(set(ids)) and len(set(held[source])) == len(held[source]) > 1


def test_projected_document_id_is_chunk_scoped(sample_wb, retriever_of) -> None:
    result = retriever_of(dense_port(sample_wb)).lookup("CPU", search=SearchOptions(mode="dense"))
    assert len(result.projection.items) == len(result.blocks) == len(result.evidence)
    for item, block, best in zip(result.projection.items, result.blocks, result.evidence):
        assert item.document_id == block.key and "#chunk-" in item.document_id
        assert item.source == block.doc_id == best.doc_id and block.matched[0] == best.evidence_key
        assert block.key == best.evidence_key or len(block.matched) > 1  # a range only for merged hits


def test_default_dense_adapter_goes_through_the_port(sample_wb, retriever_of) -> None:
    port = dense_port(sample_wb)
    hits = port.search("memory leak", 5).hits
    assert len(hits) == 5 and all(h.channels.keys() == {"dense"} for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    result = retriever_of(port).lookup("memory leak", search=SearchOptions(mode="dense"))
    assert all(c.hit_reasons == ("dense",) for c in result.candidates)


@pytest.mark.parametrize(
    ("query", "overrides", "message"),
    [
        ("   ", {}, "The query is empty"),
        ("x", {"retrieve_k": 0}, "retrieve-k must be a whole number of at least 1"),
        ("x", {"return_n": -2}, "return-n must be a whole number"),
        ("x", {"retrieve_k": 3, "return_n": 5}, r"return-n \(5\) cannot be larger than retrieve-k \(3\)"),
        ("x" * 5000, {}, "the limit is 4000"),
    ],
)
def test_bad_lookups_get_clear_messages(sample_wb, query: str, overrides: dict, message: str, retriever_of) -> None:
    with pytest.raises(RetrievalError, match=message):
        retriever_of(sample_wb.retriever).lookup(query, **overrides)


@pytest.mark.milvus
def test_empty_knowledge_base(tmp_path, local_embedder, retriever_of) -> None:
    from tests.helpers import make_workbench

    wb = make_workbench(tmp_path, embedder=local_embedder)
    try:
        for mode in ("dense", "bm25", "hybrid"):
            with pytest.raises(RetrievalError, match="The knowledge base is empty"):
                retriever_of(wb.retriever).lookup("anything", search=SearchOptions(mode=mode))
    finally:
        wb.close()


def test_assemble_reuses_a_fetch_and_refuses_mismatches(sample_wb, retriever_of) -> None:
    retriever = retriever_of(sample_wb.retriever)
    params = retriever.params(retrieve_k=20, return_n=5)
    fetched = retriever.fetch("磁盘空间不足", params)
    narrow = retriever.assemble(fetched, replace(params, return_n=2, max_chunks_per_document=1))
    wide = retriever.assemble(fetched, params)
    assert len(narrow.evidence) <= 2 and len(wide.evidence) >= len(narrow.evidence)
    assert narrow.candidates == wide.candidates
    with pytest.raises(RetrievalError, match="fetch again"):
        retriever.assemble(fetched, replace(params, retrieve_k=30))


def test_lookup_json_has_the_documented_shape(sample_wb, retriever_of) -> None:
    out = retriever_of(sample_wb.retriever).lookup("How is the on-call escalation done?").to_dict()
    assert {"params", "raw_hits", "evidence", "dropped", "projection", "timings"} <= out.keys()
    assert {"rank", "id", "score", "doc_id", "chunk_index", "evidence_key", "status"} <= out["raw_hits"][0].keys()
    assert {"evidence_key", "doc_id", "chunk_index", "source", "score", "content", "hit_reasons"} <= \
        out["evidence"][0].keys()
    assert {"document_id", "source", "content"} <= out["projection"][0].keys()
    assert len(out["raw_hits"]) == len(out["evidence"]) + len(out["dropped"])
    assert {"search", "postprocess", "projection", "total"} <= out["timings"].keys()

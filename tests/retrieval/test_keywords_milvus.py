"""The keyword channel on Milvus Lite (the sample knowledge base): the matched terms of real hits are in their text, the
terms' scores add up to Milvus's BM25 score of each hit, so they rank the BM25 hits as Milvus does; explain shows the
expected chunk's terms."""

from __future__ import annotations

import pytest

from rag_core.records import SearchOptions
from rag_core.retrieval.explain import explain
from rag_core.retrieval.keywords import found_in, query_terms
from rag_core.text import fold

pytestmark = pytest.mark.milvus

BM25 = SearchOptions(mode="bm25")


@pytest.mark.parametrize("query", ["disk full deleting logs", "慢查询怎么处理", "向量檢索的索引"])
def test_matched_terms_are_in_the_hits_text_and_their_scores_are_milvus_bm25_score(sample_wb, query):
    result = sample_wb.retriever.lookup(query, search=BM25, retrieve_k=10)
    d = result.to_dict()
    assert d["query_terms"] == list(query_terms(query)) and d["keywords"]["scored_by"] == "milvus"
    hits = d["raw_hits"]
    assert len(hits) >= 3
    for h in hits:
        assert h["matched_terms"] and set(h["matched_terms"]) <= set(d["query_terms"])
        assert all(found_in(term, fold(h["content"])) for term in h["matched_terms"]), h
        assert h["bm25_exact"] is True, h
        assert sum(h["term_scores"].values()) == pytest.approx(h["channels"]["bm25"]["score"], rel=1e-3)
        assert sum(h["term_shares"].values()) == pytest.approx(1.0, abs=1e-3)
    assert d["keywords"]["exact"] == d["keywords"]["checked"] == len(hits)
    # the estimate ranks the BM25 hits as Milvus's scores do
    sums = [sum(h["term_scores"].values()) for h in hits]
    assert sums == sorted(sums, reverse=True)


def test_a_term_no_chunk_holds_is_a_query_term_matched_by_no_hit(sample_wb):
    d = sample_wb.retriever.lookup("disk zyxwvutsrq", search=BM25, retrieve_k=5).to_dict()
    assert d["query_terms"] == ["disk", "zyxwvutsrq"]
    assert d["raw_hits"] and all(h["matched_terms"] == ["disk"] for h in d["raw_hits"])


def test_hybrid_hits_found_by_dense_alone_are_scored_too(sample_wb):
    d = sample_wb.retriever.lookup("How do I free disk space?", retrieve_k=20).to_dict()
    dense_only = [h for h in d["raw_hits"] if "bm25" not in h["channels"]]
    assert dense_only, "the query should have hits the BM25 channel did not find"
    for h in dense_only:
        assert h["bm25_exact"] is None  # nothing to check the sum against
        assert all(found_in(term, fold(h["content"])) for term in h["matched_terms"])


def test_explain_shows_the_expected_chunks_terms(sample_wb):
    e = explain(sample_wb.retriever, sample_wb.store, "disk full deleting logs", "runbooks/disk_full.md#chunk-0",
                search=BM25)
    d = e.to_dict()
    assert d["query_terms"] == ["disk", "full", "deleting", "logs"]
    (target,) = [c for c in d["chunks"] if c["target"]]
    assert target["matched_terms"] and target["bm25_exact"] is True
    assert sum(target["term_scores"].values()) == pytest.approx(target["channels"]["bm25"]["score"], rel=1e-3)
    assert all("matched_terms" not in c for c in d["chunks"] if not c["target"])


def test_keywords_are_worked_out_only_when_read(sample_wb, monkeypatch):
    """An evaluation's lookups (fetch + assemble) never read them: no request is sent for them until `to_dict` (or
    `keywords`) asks; `lookup` works them out at once, while the store is open (the CLI prints after closing it)."""
    from rag_core.retrieval import keywords

    calls = []
    real = keywords.of_candidates
    monkeypatch.setattr(keywords, "of_candidates", lambda *a: calls.append(a) or real(*a))
    retriever = sample_wb.retriever
    params = retriever.params(search=BM25, retrieve_k=5)
    result = retriever.assemble(retriever.fetch("disk full", params), params)
    assert calls == [] and "keywords" not in result.timings
    first = result.to_dict()
    assert len(calls) == 1 and first["query_terms"] and "keywords" in first["timings"]
    assert result.to_dict()["query_terms"] == first["query_terms"] and len(calls) == 1  # worked out once
    looked_up = retriever.lookup("disk full", search=BM25, retrieve_k=5)
    assert len(calls) == 2 and "keywords" in looked_up.timings

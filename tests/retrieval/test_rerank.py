"""The rerank stage between fetch and post-processing: order, trace, fallback and failure, and that
every entry point (lookup, debugger cache, agent tool, search --json) gets it."""

from __future__ import annotations

import math

import pytest

from rag_core.agent import knowledge_base_tool
from rag_core.errors import RagError, RetrievalError
from rag_core.records import RerankResult, SearchHit, SearchOptions
from rag_core.retrieval import KnowledgeRetriever
from rag_core.retrieval.rerank import RerankParams
from tests.retrieval.fakes import ScriptedPort, ScriptedReranker
from ui.lookup import cached_lookup


def hit(doc: str, index: int, score: float, content: str) -> SearchHit:
    return SearchHit(id=f"{doc}-{index}", score=score, content=content,
                     metadata={"docId": doc, "chunkIndex": index}, channels={"dense": (0, score)})


# fused order a0, a1, b0, c0, a2, d0, e0; the "model" prefers the text with the most "!"
HITS = [hit("a", 0, 0.9, "a0"), hit("a", 1, 0.8, "a1 !!"), hit("b", 0, 0.7, "b0 !!!!"), hit("c", 0, 0.6, "c0 !"),
        hit("a", 2, 0.5, "a2 !!!!!"), hit("d", 0, 0.4, "d0 !!!!!!"), hit("e", 0, 0.3, "e0")]
BANGS = ScriptedReranker(lambda q, d: float(d.count("!")))


def retriever(reranker=BANGS) -> KnowledgeRetriever:
    return KnowledgeRetriever(ScriptedPort(HITS), reranker=reranker)


def lookup(r: KnowledgeRetriever, **overrides):
    return r.lookup("q", search=SearchOptions(mode="dense"), **overrides)


def test_evidence_follows_the_reranker_and_every_hit_keeps_both_ranks():
    result = lookup(retriever(), retrieve_k=7, return_n=4, max_chunks_per_document=2,
                    rerank=RerankParams(candidates=7))
    order = [c.evidence_key for c in result.candidates]
    assert order == ["d#chunk-0", "a#chunk-2", "b#chunk-0", "a#chunk-1", "c#chunk-0", "a#chunk-0", "e#chunk-0"]
    assert [c.rank for c in result.candidates] == list(range(1, 8))
    assert [c.fused_rank for c in result.candidates] == [6, 5, 3, 2, 4, 1, 7]
    assert [c.rerank_score for c in result.candidates] == [6.0, 5.0, 4.0, 2.0, 1.0, 0.0, 0.0]
    # post-processing walks the reranked order: a0 (fused #1) is capped behind a2 and a1
    assert result.evidence_keys == ["d#chunk-0", "a#chunk-2", "b#chunk-0", "a#chunk-1"]
    capped = next(t for t in result.traces if t.evidence_key == "a#chunk-0")
    assert capped.fate == "doc_cap" and capped.drop.by == ("a#chunk-2", "a#chunk-1") and capped.fused_rank == 1
    out = result.to_dict()
    first = out["raw_hits"][0]
    assert (first["rank"], first["fused_rank"], first["rerank_score"]) == (1, 6, 6.0)
    assert out["evidence"][0]["fused_rank"] == 6 and out["rerank"]["applied"] and out["warnings"] == []
    assert out["params"]["rerank"] == {"enabled": True, "candidates": 7, "on_error": "fallback"}
    assert "rerank" in result.timings and result.timings["total"] >= result.timings["rerank"]


def test_only_the_top_candidates_go_to_the_model_and_the_rest_follow_in_fused_order():
    model = ScriptedReranker(lambda q, d: float(d.count("!")))
    result = lookup(retriever(model), retrieve_k=7, return_n=7, max_chunks_per_document=7,
                    rerank=RerankParams(candidates=3))
    assert model.calls == [("q", ("a0", "a1 !!", "b0 !!!!"))]
    assert [c.fused_rank for c in result.candidates] == [3, 2, 1, 4, 5, 6, 7]
    assert [c.rerank_score for c in result.candidates][3:] == [None] * 4
    assert result.rerank.candidates == 3


@pytest.mark.parametrize("failure", [
    RagError("HTTP 503 from the rerank endpoint"),
    TimeoutError("read timed out"),
    "wrong count",
    "nan",
])
def test_fallback_keeps_the_fused_order_with_a_visible_warning(failure):
    if failure == "wrong count":
        model = ScriptedReranker(lambda q, d: 1.0)
        model.rerank = lambda query, documents: RerankResult((1.0,))  # one score for seven documents
    elif failure == "nan":
        model = ScriptedReranker(lambda q, d: math.nan)
    else:
        model = ScriptedReranker(lambda q, d: 0.0, error=failure)
    result = lookup(retriever(model), retrieve_k=7, return_n=3)
    assert [c.fused_rank for c in result.candidates] == list(range(1, 8))
    assert all(c.rerank_score is None for c in result.candidates)
    assert result.evidence_keys == ["a#chunk-0", "a#chunk-1", "b#chunk-0"]
    (warning,) = result.warnings
    assert warning.startswith("Reranking with fake:scripted failed") and "fused order" in warning
    out = result.to_dict()
    assert out["warnings"] == [warning] and out["rerank"]["applied"] is False and out["rerank"]["error"]


def test_on_error_fail_fails_the_lookup_with_one_clear_line():
    model = ScriptedReranker(lambda q, d: 0.0, error=RagError("HTTP 401: the API key was rejected"))
    with pytest.raises(RetrievalError) as info:
        lookup(retriever(model), rerank=RerankParams(on_error="fail"))
    message = str(info.value)
    assert message.startswith("Reranking with fake:scripted failed: HTTP 401") and "\n" not in message


@pytest.mark.parametrize(("params", "message"), [
    (RerankParams(candidates=0), "rerank candidates must be a whole number of at least 1"),
    (RerankParams(on_error="ignore"), "rerank on-error must be one of fallback, fail"),
])
def test_bad_rerank_params_are_refused(params, message):
    with pytest.raises(RetrievalError, match=message):
        lookup(retriever(), rerank=params)


def test_disabled_or_absent_reranker_leaves_the_fused_order():
    model = ScriptedReranker(lambda q, d: float(d.count("!")))
    off = lookup(retriever(model), rerank=RerankParams(enabled=False))
    none = lookup(retriever(None))
    assert model.calls == [] and off.rerank is None and none.rerank is None
    assert off.evidence_keys == none.evidence_keys == ["a#chunk-0", "a#chunk-1", "b#chunk-0", "c#chunk-0", "d#chunk-0"]
    assert none.to_dict()["raw_hits"][0]["fused_rank"] == 1 and none.to_dict()["rerank"] is None


def test_post_processing_reruns_never_call_the_model_again():
    model = ScriptedReranker(lambda q, d: float(d.count("!")))
    r = retriever(model)
    cache: dict = {}
    params = r.params(retrieve_k=7, return_n=5, search=SearchOptions(mode="dense"))
    cached_lookup(r, "q", params, cache)
    _, from_cache = cached_lookup(r, "q", r.params(retrieve_k=7, return_n=2, max_chunks_per_document=1,
                                                   search=SearchOptions(mode="dense")), cache)
    assert from_cache and len(model.calls) == 1
    cached_lookup(r, "q", r.params(retrieve_k=7, return_n=2, search=SearchOptions(mode="dense"),
                                   rerank=RerankParams(candidates=2)), cache)
    assert len(model.calls) == 2  # other rerank settings: a new fetch


def test_the_agent_tool_gets_the_reranked_evidence():
    tool = knowledge_base_tool(retriever(ScriptedReranker(lambda q, d: float(d.count("!")))))
    output = tool.fn("q")
    assert [item["document_id"] for item in output.data["results"]][:2] == ["d#chunk-0", "a#chunk-2"]
    assert output.lookup.rerank is not None


def test_a_real_knowledge_base_reranked_by_a_model_preferring_chinese(sample_wb):
    """Real Milvus Lite hits, a scripted model: the evidence order is the model's, movements recorded."""
    zh = ScriptedReranker(lambda q, d: sum("\u4e00" <= ch <= "\u9fff" for ch in d) / max(1, len(d)))
    base = sample_wb.retriever
    result = KnowledgeRetriever(base.port, base.defaults, zh).lookup(
        "how to handle alerts 告警处理", retrieve_k=20, return_n=5, rerank=RerankParams(candidates=20))
    scores = [c.rerank_score for c in result.candidates]
    assert scores == sorted(scores, reverse=True) and len(zh.calls) == 1
    assert [c.rerank_score for c in result.evidence] == sorted((c.rerank_score for c in result.evidence), reverse=True)
    assert sorted(c.fused_rank for c in result.candidates) == list(range(1, 21))
    assert any(c.fused_rank != c.rank for c in result.candidates)

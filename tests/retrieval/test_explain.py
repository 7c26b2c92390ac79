"""Why wasn't it retrieved? Constructed cases with exact ranks (the in-memory port, BM25 mode: a chunk's
score grows with how often it says "alpha"), an answer split by a chunk boundary, and real queries on
the sample knowledge base in Milvus Lite, checked against a brute-force ranking."""

from __future__ import annotations

import numpy as np
import pytest

from rag_core.errors import RagError
from rag_core.phrases import Phrase
from rag_core.records import Chunk, SearchOptions
from rag_core.retrieval import KnowledgeRetriever
from rag_core.retrieval.expand import ExpandParams
from rag_core.retrieval.explain import DEPTH, Expectation, explain, locate_answer, parse_expect
from rag_core.retrieval.rerank import RerankParams
from tests.retrieval.fakes import ScriptedReranker
from tests.retrieval.memory import InMemorySearchPort


def document(paragraphs: list[str]) -> list[Chunk]:
    """One chunk per paragraph, with exact offsets into "\\n\\n".join(paragraphs)."""
    chunks, pos = [], 0
    for i, text in enumerate(paragraphs):
        chunks.append(Chunk(i, text, pos, pos + len(text), "", (), 0))
        pos += len(text) + 2
    return chunks


def alpha(times: int, words: int = 10) -> str:
    return " ".join(["alpha"] * times + ["pad"] * (words - times))


# BM25 ranking for "alpha": many#0 (9), many#1 (8), other#0 (7), many#2 (6), x1 (5), x2 (4), x3 (3), far (2)
DOCS = {
    "many.md": document([alpha(9), alpha(8), alpha(6)]),
    "other.md": document([alpha(7)]),
    "x1.md": document([alpha(5)]),
    "x2.md": document([alpha(4)]),
    "x3.md": document([alpha(3)]),
    "far.md": document([alpha(2)]),
    "none.md": document(["nothing to see here, only beta and gamma"]),
}
BM25 = SearchOptions(mode="bm25")
# Merging off: the cases are about post-processing's checks (merging and expanding: test_explain_blocks below).
PARAMS = dict(search=BM25, retrieve_k=6, return_n=3, max_chunks_per_document=2, expand=ExpandParams(merge=False))


@pytest.fixture(scope="module")
def port() -> InMemorySearchPort:
    return InMemorySearchPort(DOCS)


def why(port, expect, **overrides):
    return explain(KnowledgeRetriever(port), port.store, "alpha", expect, **{**PARAMS, **overrides})


def test_the_lookup_is_what_the_cases_assume(port):
    result = KnowledgeRetriever(port).lookup("alpha", **PARAMS)
    assert [t.evidence_key for t in result.traces] == ["many.md#chunk-0", "many.md#chunk-1", "other.md#chunk-0",
                                                       "many.md#chunk-2", "x1.md#chunk-0", "x2.md#chunk-0"]
    assert [t.fate for t in result.traces] == ["kept", "kept", "kept", "doc_cap", "beyond_return_n", "beyond_return_n"]


def test_a_chunk_dropped_by_the_per_document_cap(port):
    e = why(port, "many.md#chunk-2")
    (target,) = e.targets
    assert (target.fate, target.fused_rank, target.channels["bm25"].rank) == ("doc_cap", 4, 4)
    assert target.drop.by == ("many.md#chunk-0", "many.md#chunk-1")
    assert e.cause == "doc_cap" and not e.retrieved
    assert e.fix.changes == {"max_chunks_per_document": 3, "return_n": 4} and e.fix.verified
    assert "per-document cap (2): many.md#chunk-0, many.md#chunk-1 came first" in e.verdict
    assert "max-chunks-per-document ≥ 3 and return-n ≥ 4" in e.verdict


def test_a_document_beyond_return_n(port):
    e = why(port, "x1.md")
    assert e.cause == "beyond_return_n" and e.targets[0].rank == 5
    assert e.fix.changes == {"return_n": 4} and e.fix.verified  # many#2 is capped: x1 is the 4th accepted


def test_a_document_beyond_retrieve_k(port):
    e = why(port, "far.md")
    (target,) = e.targets
    assert (target.fate, target.fused_rank, target.channels["bm25"].rank) == ("beyond_retrieve_k", None, 8)
    assert e.cause == "beyond_retrieve_k"
    assert e.fix.changes == {"retrieve_k": 8, "return_n": 7} and e.fix.verified
    assert "beyond retrieve-k (6): bm25 #8" in e.verdict


def test_no_channel_ranks_it(port):
    e = why(port, "none.md")
    assert e.cause == "no_channel" and e.fix is None
    assert e.targets[0].channels["bm25"].score is None  # shares no term with the query
    assert f"no channel ranks it in the top {DEPTH:,}: the query and the chunk share no terms" in e.verdict


def test_retrieved_chunks_and_documents_need_no_fix(port):
    for expect in ("many.md", "many.md#chunk-1", "other.md"):
        e = why(port, expect)
        assert e.retrieved and e.cause == "in_evidence" and e.fix is None
    # a document-level question counts any chunk; every chunk still gets its own fate
    e = why(port, "many.md")
    assert [c.fate for c in e.chunks] == ["kept", "kept", "doc_cap"]


def test_hybrid_mode_finds_the_entry_width_through_fusion(port):
    e = why(port, "far.md", search=SearchOptions(mode="hybrid", fusion="rrf"))
    assert e.cause == "beyond_retrieve_k" and e.fix.verified
    k = e.fix.changes["retrieve_k"]
    retriever = KnowledgeRetriever(port)
    # the smallest width: one less does not fetch it
    assert "far.md#chunk-0" in {c.evidence_key for c in retriever.lookup(
        "alpha", **{**PARAMS, "search": SearchOptions(mode="hybrid", fusion="rrf"), "retrieve_k": k}).candidates}
    assert "far.md#chunk-0" not in {c.evidence_key for c in retriever.lookup(
        "alpha", **{**PARAMS, "search": SearchOptions(mode="hybrid", fusion="rrf"), "retrieve_k": k - 1}).candidates}


def test_the_reranker_is_part_of_the_story(port):
    """A reranker that loves x3.md lifts it from fused #7... once it is a candidate."""
    model = ScriptedReranker(lambda q, d: 10.0 if d == alpha(3) else 0.0)
    retriever = KnowledgeRetriever(port, reranker=model)
    e = explain(retriever, port.store, "alpha", "x3.md", **PARAMS, rerank=RerankParams(candidates=20))
    assert e.fix.changes == {"retrieve_k": 7} and e.fix.verified  # reranked to #1 once fetched
    (target,) = e.targets
    assert target.fate == "beyond_retrieve_k"
    e = explain(retriever, port.store, "alpha", "x2.md", **PARAMS, rerank=RerankParams(candidates=20))
    assert e.targets[0].fused_rank == 6 and e.targets[0].rank == 6 and e.targets[0].rerank_score == 0.0


def test_a_chunk_below_the_score_threshold_names_the_highest_threshold_that_keeps_it(port):
    scores = {t.evidence_key: t.score for t in KnowledgeRetriever(port).lookup("alpha", **PARAMS).traces}
    other = scores["other.md#chunk-0"]
    threshold = (other + scores["many.md#chunk-1"]) / 2  # between many#1 and other#0
    e = why(port, "other.md", score_threshold=threshold)
    (target,) = e.targets
    assert target.fate == "below_threshold" and e.cause == "below_threshold" and not e.retrieved
    assert target.drop.score == other and target.drop.threshold == threshold
    assert e.highest_threshold == other
    assert e.fix.changes == {"score_threshold": other} and e.fix.verified
    assert f"below threshold ({other:.2f} < {threshold:.2f})" in e.verdict
    assert "score-threshold ≤" in e.verdict and "The highest bm25 score-threshold that keeps it" in e.verdict
    # kept, with a threshold on: the verdict still says how high it may go
    e = why(port, "many.md#chunk-0", score_threshold=threshold)
    assert e.retrieved and e.highest_threshold == scores["many.md#chunk-0"] and "(now " in e.verdict


def test_the_threshold_is_per_search_mode(port):
    retriever = KnowledgeRetriever(port)
    params = retriever.params(search=BM25, score_threshold=1e9)
    assert params.score_threshold == 1e9 and params.thresholds.hybrid == 0.0
    result = retriever.lookup("alpha", **{**PARAMS, "score_threshold": 1e9})
    assert not result.evidence and {t.fate for t in result.traces} == {"below_threshold"}
    assert "Every hit scored below the bm25 score threshold" in result.warnings[0]
    hybrid = retriever.lookup("alpha", **{**PARAMS, "search": SearchOptions(mode="hybrid"),
                                          "thresholds": params.thresholds})
    assert hybrid.evidence  # the bm25 threshold does not apply to hybrid scores
    with pytest.raises(RagError, match="score-threshold must be a number of at least 0"):
        retriever.params(score_threshold=-1.0)


@pytest.mark.parametrize(("expect", "message"), [
    ("missing.md", "No document 'missing.md' in the knowledge base"),
    ("many.md#chunk-7", "many.md has chunks 0 to 2; there is no chunk-7"),
    ("", "Say what was expected"),
])
def test_bad_expectations_get_one_clear_line(port, expect, message):
    with pytest.raises(RagError, match=message):  # an unknown document is NotIndexed (a 404 over HTTP)
        why(port, expect)


def test_parse_expect():
    assert parse_expect(" a/b.md#chunk-12 ").label == "a/b.md#chunk-12"
    assert parse_expect("a#chunk-x.md").chunk_index is None  # not a chunk suffix: part of the name
    assert parse_expect("a.md").chunk_index is None


# ------------------------------------------------------------------------------------ the answer text
SPLIT_DOC = ("The rotation policy keeps logs for fourteen days. Older files are compressed. "
             "To free space now, run the cleanup job with the flag --force-purge-archives and then restart "
             "the collector service so it reopens its files.")


def rows(text: str, size: int, overlap: int):
    from rag_core.chunking import chunk_text

    return [(c.chunk_index, c.text, c.start, c.end) for c in chunk_text(text, size, overlap)]


def test_an_answer_split_across_two_chunks_shows_the_boundary():
    cut = SPLIT_DOC.index("with the flag")  # a boundary inside the answer, as a hard cut would make
    chunks = [(0, SPLIT_DOC[:cut], 0, cut), (1, SPLIT_DOC[cut:], cut, len(SPLIT_DOC))]
    answer = "run the cleanup job with the flag --force-purge-archives"
    located = locate_answer(chunks, answer)
    assert located.found and located.split and located.match == "exact"
    (span,) = located.spans
    assert span.chunks == () and len(span.overlapping) == 2
    b = span.boundary
    assert (b["left_chunk"], b["right_chunk"], b["left_end"]) == (0, 1, cut)
    assert (b["left_text"], b["right_text"]) == ("run the cleanup job ", "with the flag --force-purge-archives")
    assert "cleanup job  ⟦chunk boundary⟧ with the flag" in b["context"]
    assert "chunk-0 ends with “run the cleanup job ”" in located.describe("doc.md")
    # an overlapping next chunk that starts before the answer keeps it whole
    start = SPLIT_DOC.index("To free")
    overlapped = [chunks[0], (1, SPLIT_DOC[start:], start, len(SPLIT_DOC))]
    whole = locate_answer(overlapped, answer)
    assert whole.found and not whole.split and whole.spans[0].chunks == (1,)


def test_answer_matching_ignores_case_and_whitespace_and_says_when_absent():
    chunks = rows(SPLIT_DOC, 800, 100)
    located = locate_answer(chunks, "older FILES   are\ncompressed")
    assert located.match == "normalized" and located.spans[0].chunks == (0,)
    assert SPLIT_DOC[located.spans[0].start:located.spans[0].end] == "Older files are compressed"
    absent = locate_answer(chunks, "reboot the cluster")
    assert not absent.found and "does not occur in doc.md" in absent.describe("doc.md")


def test_a_known_answer_offset_picks_that_occurrence():
    text = "alpha beta. " * 10 + "the answer is 42. " + "gamma delta. " * 10 + "the answer is 42 again."
    rows = [(0, text[:100], 0, 100), (1, text[100:200], 100, 200), (2, text[200:], 200, len(text))]
    both = locate_answer(rows, "the answer is 42")
    assert [s.chunks for s in both.spans] == [(1,), (2,)]
    second = text.rindex("the answer is 42")
    only = locate_answer(rows, "the answer is 42", start=second)
    assert [s.chunks for s in only.spans] == [(2,)] and only.spans[0].start == second
    padded = locate_answer(rows, " the answer is 42 ", start=second - 1)  # a label with its spaces
    assert [s.chunks for s in padded.spans] == [(2,)] and padded.spans[0].start == second


def test_explain_with_an_answer_finds_the_document_and_targets_its_chunks():
    cut = SPLIT_DOC.index("with the flag")
    logs = [Chunk(0, SPLIT_DOC[:cut], 0, cut, "", (), 0), Chunk(1, SPLIT_DOC[cut:], cut, len(SPLIT_DOC), "", (), 0)]
    docs = {"logs.md": logs, **DOCS}
    port = InMemorySearchPort(docs)
    e = explain(KnowledgeRetriever(port), port.store, "how do I free disk space", None,
                answer="compressed", search=BM25, retrieve_k=5, return_n=3)
    assert e.expect.doc_id == "logs.md" and e.answer.found and not e.answer.split
    assert [c.evidence_key for c in e.targets] == ["logs.md#chunk-0"]
    split = explain(KnowledgeRetriever(port), port.store, "cleanup job flag", "logs.md",
                    answer="run the cleanup job with the flag --force-purge-archives", search=BM25)
    assert split.answer.split and {c.chunk_index for c in split.targets} == {0, 1}
    assert split.to_dict()["answer"]["split"] is True


def test_an_answer_in_the_other_chinese_script_is_found_and_shown_as_the_document_writes_it():
    """BM25 folds Traditional to Simplified, and so does the answer's location (the comparison, not the text):
    a Simplified answer in a Traditional document is located, its span and chunk shown in the Traditional text."""
    trad = "# 記憶體\n\n資料庫的記憶體使用率過高時，先檢查連線數與緩衝區設定。\n"
    port = InMemorySearchPort({"trad.md": [Chunk(0, trad, 0, len(trad), "", (), 0)], **DOCS})
    e = explain(KnowledgeRetriever(port), port.store, "记忆体使用率过高怎么办", None, answer="检查连线数与缓冲区设定",
                search=BM25, retrieve_k=5, return_n=3)
    assert e.expect.doc_id == "trad.md" and e.answer.found and e.answer.match == "normalized"
    (span,) = e.answer.spans
    assert trad[span.start:span.end] == "檢查連線數與緩衝區設定" and span.chunks == (0,)
    assert [c.evidence_key for c in e.targets] == ["trad.md#chunk-0"]
    assert "檢查連線數" in e.targets[0].text and e.targets[0].channels["bm25"].score is not None  # terms shared, folded


# ------------------------------------------------------------------------------------ real queries
@pytest.fixture(scope="module")
def all_chunks(sample_wb):
    """Every chunk of the sample knowledge base with its vector, embedded here from scratch."""
    texts, keys = [], []
    for d in sample_wb.store.list_documents():
        for chunk in sample_wb.store.get_chunks(d.doc_id):
            texts.append(chunk.content)
            keys.append(f"{d.doc_id}#chunk-{chunk.chunk_index}")
    vectors = sample_wb.embedder.embed_documents(texts)
    return keys, vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def brute_force_dense_ranks(wb, all_chunks, query: str) -> dict[str, int]:
    """Rank of every chunk by cosine to the query over the whole knowledge base."""
    keys, vectors = all_chunks
    q = wb.embedder.embed_query(query)
    scores = vectors @ (q / np.linalg.norm(q))
    return {k: int((scores > scores[i] + 1e-6).sum()) + 1 for i, k in enumerate(keys)}


@pytest.mark.parametrize(("query", "expect"), [
    ("How do I free disk space?", "policies/oncall_zh.md"),
    ("慢查询 索引优化", "runbooks/cpu_high.md#chunk-1"),
])
def test_real_queries_on_the_sample_knowledge_base(sample_wb, all_chunks, query, expect):
    e = explain(sample_wb.retriever, sample_wb.store, query, expect, retrieve_k=5, return_n=3)
    assert not e.retrieved and e.cause in ("beyond_retrieve_k", "beyond_return_n", "doc_cap")
    doc_id = expect.split("#")[0]
    assert len(e.chunks) == next(d.chunks for d in sample_wb.store.list_documents() if d.doc_id == doc_id)
    exact = brute_force_dense_ranks(sample_wb, all_chunks, query)
    for chunk in e.chunks:  # exact over the whole knowledge base (float ties may swap neighbours)
        assert abs(chunk.channels["dense"].rank - exact[chunk.evidence_key]) <= 1
    assert e.fix is not None and e.fix.verified
    applied = sample_wb.retriever.lookup(query, **{"retrieve_k": 5, "return_n": 3, **e.fix.changes})
    assert e.fix.target in applied.evidence_keys
    data = e.to_dict()
    assert data["verdict"] == e.verdict and data["fix"]["text"] in e.verdict and data["chunks"]


def test_a_split_answer_is_a_chunking_cause_even_when_its_parts_are_evidence():
    cut = SPLIT_DOC.index("with the flag")
    logs = [Chunk(0, SPLIT_DOC[:cut], 0, cut, "", (), 0), Chunk(1, SPLIT_DOC[cut:], cut, len(SPLIT_DOC), "", (), 0)]
    port = InMemorySearchPort({"logs.md": logs})
    e = explain(KnowledgeRetriever(port), port.store, "cleanup job flag", "logs.md",
                answer="run the cleanup job with the flag --force-purge-archives", search=BM25, retrieve_k=2,
                return_n=2, expand=ExpandParams(merge=False))
    assert all(c.fate == "kept" for c in e.targets)  # both parts are evidence...
    assert not e.retrieved and e.cause == "answer_split" and e.fix is None  # ...but no block holds the answer
    assert "split across a chunk boundary" in e.verdict and "chunk.overlap" in e.verdict


def test_a_follow_up_is_explained_as_the_question_it_was_searched_for(port):
    # the earlier turns reach explain's lookup, and each channel ranks the rewritten question, not the one asked
    retriever = KnowledgeRetriever(port)
    alone = explain(retriever, port.store, "What does it say?", "many.md#chunk-0", **PARAMS)
    assert alone.targets[0].channels["bm25"].rank is None and not alone.retrieved
    assert alone.to_dict()["rewrite"] is None
    e = explain(retriever, port.store, "What does it say?", "many.md#chunk-0",
                history=["user: Where is alpha?", "assistant: In [many.md#chunk-0]."], **PARAMS)
    assert e.retrieved and e.targets[0].channels["bm25"].rank == 1
    rewrite = e.to_dict()["rewrite"]
    assert (rewrite["original"], rewrite["outcome"]) == ("What does it say?", "rewritten")
    assert "alpha" in rewrite["borrowed"] and rewrite["searched"] != rewrite["original"]
    off = explain(retriever, port.store, "What does it say?", "many.md#chunk-0", rewrite="off",
                  history=["user: Where is alpha?", "assistant: In [many.md#chunk-0]."], **PARAMS)
    assert not off.retrieved and off.to_dict()["rewrite"]["outcome"] == "off"


# ---------------------------------------------------------------------------------------- small to big
def test_an_expectation_may_name_a_blocks_range():
    assert parse_expect("a.md#chunk-3..5") == Expectation("a.md", 3, 5)
    assert parse_expect("a.md#chunk-3..5").label == "a.md#chunk-3..5" and parse_expect("a.md#chunk-3..5").several
    assert parse_expect("a.md#chunk-5..3") == Expectation("a.md", 3, 5)
    assert parse_expect("a.md#chunk-4") == Expectation("a.md", 4) and not parse_expect("a.md#chunk-4").several
    assert parse_expect("a.md#chunk-4..4") == Expectation("a.md", 4)
    assert parse_expect("a.md") == Expectation("a.md")


def test_a_range_expects_any_of_its_chunks(port):
    e = why(port, "many.md#chunk-1..2")
    assert [c.evidence_key for c in e.targets] == ["many.md#chunk-1", "many.md#chunk-2"]
    assert e.retrieved and e.to_dict()["expect"] == "many.md#chunk-1..2"
    with pytest.raises(RagError, match="there is no chunk-9"):
        why(port, "many.md#chunk-1..9")


def test_a_chunk_merged_into_a_better_hits_block_is_in_the_evidence(port):
    e = why(port, "many.md#chunk-1", expand=ExpandParams())  # merging on: many#0 and many#1 touch
    (target,) = e.targets
    assert (target.fate, target.rank, target.block) == ("merged", 2, "many.md#chunk-0..1")
    assert target.cause_phrase(e.params) == Phrase("fate.merged", {"key": "many.md#chunk-0..1"})
    assert e.retrieved and e.in_context and e.cause == "in_evidence" and e.fix is None
    assert e.verdict == "many.md#chunk-1 is in the evidence: many.md#chunk-1 (#2, merged into many.md#chunk-0..1)."
    data = e.to_dict()
    assert data["chunks"][1]["block"] == "many.md#chunk-0..1" and data["blocks"][0] == "many.md#chunk-0..1"
    assert "merged into the block many.md#chunk-0..1" in data["chunks"][1]["cause"]


def test_a_chunk_inside_a_block_grown_over_it_is_in_the_context(port):
    e = why(port, "many.md#chunk-2", expand=ExpandParams("neighbours", 1))  # many#1's neighbour
    (target,) = e.targets
    assert target.fate == "doc_cap" and target.block == "many.md#chunk-0..1"  # the block of many#0 and #1 holds it
    assert target.cause_phrase(e.params) == Phrase("explain.in_block", {"key": "many.md#chunk-0..1"})
    assert target.cause(e.params) == "not a hit itself, but in the context of many.md#chunk-0..1 (expanded)"
    assert not e.retrieved and e.in_context and e.context == ("many.md#chunk-0..1",)
    assert e.cause == "in_context" and e.fix is None  # the agent reads it: nothing to fix
    assert e.verdict == ("many.md#chunk-2 is not a hit itself, but the agent gets it in the context of "
                         "many.md#chunk-0..1.")
    assert e.to_dict()["in_context"] and e.to_dict()["context"] == ["many.md#chunk-0..1"]
    # Without the expansion it is capped as before, with the fix that brings it in.
    plain = why(port, "many.md#chunk-2", expand=ExpandParams("none"))
    assert plain.targets[0].block is None and plain.cause == "doc_cap" and plain.fix is not None


def test_a_split_answer_held_whole_by_a_merged_block_is_in_the_context():
    cut = SPLIT_DOC.index("with the flag")
    logs = [Chunk(0, SPLIT_DOC[:cut], 0, cut, "", (), 0), Chunk(1, SPLIT_DOC[cut:], cut, len(SPLIT_DOC), "", (), 0)]
    port = InMemorySearchPort({"logs.md": logs})
    e = explain(KnowledgeRetriever(port), port.store, "cleanup job flag", "logs.md",
                answer="run the cleanup job with the flag --force-purge-archives", search=BM25, retrieve_k=2,
                return_n=2, expand=ExpandParams())
    assert {c.fate for c in e.targets} == {"kept", "merged"} and e.split and not e.retrieved
    assert e.context == ("logs.md#chunk-0..1",) and e.cause == "in_context" and e.fix is None

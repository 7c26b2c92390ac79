"""The debugger's compare mode: which evidence two lookups both found, by evidence key (same chunking) or by
overlapping text (two knowledge bases chunked differently), and by document."""

from __future__ import annotations

from rag_core.records import Candidate
from rag_core.retrieval import KnowledgeRetriever, LookupParams
from rag_core.retrieval.compare import BOTH, ONLY_A, ONLY_B, compare_evidence, compare_lookups
from tests.helpers import SAMPLE_KB
from tests.retrieval.memory import InMemorySearchPort


def block(doc_id: str, index: int, span: tuple[int, int] | None = None, score: float = 1.0) -> Candidate:
    meta = {"start": span[0], "end": span[1]} if span else {}
    return Candidate(rank=1, id=None, doc_id=doc_id, chunk_index=index, evidence_key=f"{doc_id}#chunk-{index}",
                     score=score, content="x", source=doc_id, metadata=meta, hit_reasons=("dense",))


def marks(side) -> dict[str, tuple[str, str]]:
    return {x.evidence_key: (x.mark, x.doc_mark) for x in side}


def test_by_key_chunks_and_documents_found_by_both_or_one() -> None:
    a = [block("d1", 0, (0, 800)), block("d1", 1, (700, 1500)), block("d2", 0)]
    b = [block("d1", 1, (700, 1500)), block("d3", 4)]
    c = compare_evidence(a, b, a_ms=12.5, b_ms=3.0)
    assert marks(c.a) == {"d1#chunk-0": (ONLY_A, BOTH), "d1#chunk-1": (BOTH, BOTH), "d2#chunk-0": (ONLY_A, ONLY_A)}
    assert marks(c.b) == {"d1#chunk-1": (BOTH, BOTH), "d3#chunk-4": (ONLY_B, ONLY_B)}
    assert (c.docs_both, c.docs_only_a, c.docs_only_b) == (("d1",), ("d2",), ("d3",))
    assert c.summary() == {"chunks_both_a": 1, "chunks_both_b": 1, "chunks_only_a": 2, "chunks_only_b": 1,
                           "docs_both": 1, "docs_only_a": 1, "docs_only_b": 1}
    assert [x.position for x in c.b] == [1, 2] and c.b[0].matches == ("d1#chunk-1",)
    assert (c.a_ms, c.b_ms) == (12.5, 3.0) and c.to_dict()["summary"] == c.summary()
    # neighbours sharing their overlap are different chunks when both sides chunk alike
    assert compare_evidence([block("d1", 0, (0, 800))], [block("d1", 1, (700, 1500))]).a[0].mark == ONLY_A


def test_by_text_matches_overlapping_chunks_not_equal_indexes() -> None:
    # A chunks at 800 characters, B at 300: the same index names different text.
    a = [block("d", 0, (0, 800)), block("d", 1, (700, 1500))]
    b = [block("d", 0, (0, 300)), block("d", 1, (270, 570)), block("d", 2, (540, 840)), block("e", 0, (0, 10))]
    c = compare_evidence(a, b, by_text=True)
    assert c.by_text
    assert {x.evidence_key: x.matches for x in c.a} == {"d#chunk-0": ("d#chunk-0", "d#chunk-1", "d#chunk-2"),
                                                        "d#chunk-1": ()}  # 140 of B#2's 300 chars: under half
    assert marks(c.b) == {"d#chunk-0": (BOTH, BOTH), "d#chunk-1": (BOTH, BOTH), "d#chunk-2": (BOTH, BOTH),
                          "e#chunk-0": (ONLY_B, ONLY_B)}
    assert c.summary()["chunks_both_a"] == 1 and c.summary()["chunks_both_b"] == 3
    # the same key on another document, or a chunk without offsets (matched by its key)
    assert compare_evidence([block("d", 0, (0, 10))], [block("e", 0, (0, 10))], by_text=True).a[0].mark == ONLY_A
    assert compare_evidence([block("d", 3)], [block("d", 3, (0, 10))], by_text=True).a[0].mark == BOTH


def test_two_parameter_sets_on_one_knowledge_base() -> None:
    texts = {p.relative_to(SAMPLE_KB).as_posix(): p.read_text(encoding="utf-8")
             for p in sorted(SAMPLE_KB.rglob("*.md"))}
    retriever = KnowledgeRetriever(InMemorySearchPort.from_texts(texts, 400, 40), LookupParams())
    narrow = retriever.lookup("How do I free disk space?", return_n=3)
    wide = retriever.lookup("How do I free disk space?", return_n=6)
    c = compare_lookups(narrow, wide)
    # the same candidates cut at 3 and at 6: A's evidence is the start of B's
    assert [x.mark for x in c.a] == [BOTH] * 3 and [x.mark for x in c.b] == [BOTH] * 3 + [ONLY_B] * 3
    assert c.a_ms == narrow.timings["total"] and c.b_ms == wide.timings["total"]


def test_two_chunkings_of_the_same_documents_by_text() -> None:
    texts = {p.relative_to(SAMPLE_KB).as_posix(): p.read_text(encoding="utf-8")
             for p in sorted(SAMPLE_KB.rglob("*.md"))}
    small = KnowledgeRetriever(InMemorySearchPort.from_texts(texts, 300, 30), LookupParams(return_n=5))
    large = KnowledgeRetriever(InMemorySearchPort.from_texts(texts, 1200, 100), LookupParams(return_n=5))
    query = "How do I free disk space?"
    c = compare_lookups(small.lookup(query), large.lookup(query), by_text=True)
    assert c.docs_both and c.docs_both[0] == "runbooks/disk_full.md"
    for side, other in ((c.a, c.b), (c.b, c.a)):
        keys = {x.evidence_key for x in other}
        for x in side:
            assert (x.mark == BOTH) == bool(x.matches) and set(x.matches) <= keys
            assert (x.doc_mark == BOTH) == (x.doc_id in c.docs_both)
    assert any(x.mark == BOTH for x in c.a)  # the 300-character chunk lies inside a 1,200-character one

"""Post-processing rules and their properties (Hypothesis)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_core.records import Candidate, DropReason
from rag_core.retrieval.postprocess import postprocess


def cand(rank: int, doc: str | None, chunk: int | None, content: str = "", reasons=("dense",), key=None) -> Candidate:
    key = key or (f"{doc}#chunk-{chunk}" if doc is not None and chunk is not None else f"vector:{rank}")
    return Candidate(rank=rank, id=str(rank), doc_id=doc, chunk_index=chunk, evidence_key=key,
                     score=1.0 / rank, content=content or f"c{rank}", source=doc or "", metadata={},
                     hit_reasons=tuple(reasons), channels={r: (rank, 1.0) for r in reasons})


def test_same_document_different_chunks_are_kept() -> None:
    """Spec: same source/docId, different chunk indexes -> separate blocks unless the cap removes one."""
    out = postprocess([cand(1, "docA", 0), cand(2, "docA", 1)], return_n=5, max_chunks_per_document=2)
    assert [b.evidence_key for b in out.evidence] == ["docA#chunk-0", "docA#chunk-1"]
    capped = postprocess([cand(1, "docA", 0), cand(2, "docA", 1)], return_n=5, max_chunks_per_document=1)
    assert [b.evidence_key for b in capped.evidence] == ["docA#chunk-0"]
    assert capped.traces[1].status == "doc_cap (docA already has 1)"


def test_true_duplicates_merge_keeping_higher_ranked_content() -> None:
    """Spec: same evidenceKey -> one block, the higher-ranked content, merged hit reasons."""
    out = postprocess([cand(1, "docA", 2, "first", ("dense",)), cand(2, "docA", 2, "second", ("bm25",))],
                      return_n=5, max_chunks_per_document=2)
    [block] = out.evidence
    assert block.content == "first" and block.rank == 1
    assert block.hit_reasons == ("dense", "bm25") and set(block.channels) == {"dense", "bm25"}
    assert [t.status for t in out.traces] == ["kept", "duplicate_of docA#chunk-2"]


def test_excess_chunks_from_one_document_are_dropped() -> None:
    """Spec: more than N ranked chunks of one docId -> only the top N by ranking remain."""
    ranked = [cand(1, "A", 5), cand(2, "A", 1), cand(3, "B", 0), cand(4, "A", 9), cand(5, "A", 3)]
    out = postprocess(ranked, return_n=10, max_chunks_per_document=2)
    assert [b.evidence_key for b in out.evidence] == ["A#chunk-5", "A#chunk-1", "B#chunk-0"]
    assert [t.status for t in out.traces][3:] == ["doc_cap (A already has 2)"] * 2


def test_return_n_and_every_fate() -> None:
    ranked = [cand(1, "A", 0), cand(2, "A", 0), cand(3, "A", 1), cand(4, "A", 2), cand(5, "B", 0), cand(6, "C", 0)]
    out = postprocess(ranked, return_n=2, max_chunks_per_document=2)
    assert [t.status for t in out.traces] == [
        "kept", "duplicate_of A#chunk-0", "kept", "doc_cap (A already has 2)", "beyond_return_n", "beyond_return_n"]
    assert [t.fate for t in out.dropped] == ["duplicate", "doc_cap", "beyond_return_n", "beyond_return_n"]


def test_drop_reasons_are_structured_and_render_the_status_strings() -> None:
    ranked = [cand(1, "A", 0), cand(2, "A", 0), cand(3, "A", 1), cand(4, "A", 2), cand(5, "B", 0), cand(6, "C", 0)]
    out = postprocess(ranked, return_n=2, max_chunks_per_document=2)
    assert [t.drop for t in out.traces] == [
        None, DropReason("duplicate", key="A#chunk-0", by=("A#chunk-0",)), None,
        DropReason("doc_cap", doc_id="A", count=2, by=("A#chunk-0", "A#chunk-1")),
        DropReason("beyond_return_n", count=2), DropReason("beyond_return_n", count=2)]
    assert all(t.status == (t.drop.status if t.drop else "kept") for t in out.traces)
    assert out.traces[3].drop.to_dict() == {"kind": "doc_cap", "key": None, "doc_id": "A", "count": 2,
                                            "by": ["A#chunk-0", "A#chunk-1"]}


def test_hits_below_the_score_threshold_are_dropped_first_and_say_by_how_much() -> None:
    """Scores 1, 1/2, 1/3, 1/4: a threshold of 0.3 drops the last, which then takes no place in return-n."""
    ranked = [cand(1, "A", 0), cand(2, "B", 0), cand(3, "C", 0), cand(4, "D", 0)]
    out = postprocess(ranked, return_n=3, max_chunks_per_document=2, score_threshold=0.3)
    assert [t.status for t in out.traces] == ["kept", "kept", "kept", "below threshold (0.25 < 0.30)"]
    assert out.traces[3].drop == DropReason("below_threshold", key="D#chunk-0", score=0.25, threshold=0.3)
    assert out.traces[3].fate == "below_threshold"
    # rounding never makes the score read as large as the threshold
    close = postprocess([cand(4, "D", 0)], return_n=1, max_chunks_per_document=1, score_threshold=0.2501)
    assert close.traces[0].status == "below threshold (0.2500 < 0.2501)"
    # off (0) drops nothing
    assert not postprocess(ranked, return_n=4, max_chunks_per_document=2, score_threshold=0.0).dropped


def test_duplicate_of_a_dropped_block_is_still_a_duplicate() -> None:
    out = postprocess([cand(1, "A", 0), cand(2, "A", 1), cand(3, "B", 0), cand(4, "A", 1)],
                      return_n=5, max_chunks_per_document=1)
    assert [t.status for t in out.traces] == ["kept", "doc_cap (A already has 1)", "kept", "duplicate_of A#chunk-1"]


def test_candidates_without_doc_id_are_not_capped() -> None:
    out = postprocess([cand(i, None, None) for i in range(1, 5)], return_n=10, max_chunks_per_document=1)
    assert len(out.evidence) == 4


# ------------------------------------------------------------------------------------ properties
ranked_lists = st.lists(
    st.tuples(st.sampled_from(["A", "B", "C", None]), st.integers(0, 4), st.sampled_from(["dense", "bm25"])),
    max_size=40,
).map(lambda items: [cand(i + 1, d, c if d else None, reasons=(r,)) for i, (d, c, r) in enumerate(items)])


@pytest.mark.slow  # a property test (Hypothesis)
@settings(max_examples=300, deadline=None)
@given(ranked_lists, st.integers(1, 12), st.integers(1, 4))
def test_properties(ranked, return_n, cap) -> None:
    out = postprocess(ranked, return_n=return_n, max_chunks_per_document=cap)
    keys = [b.evidence_key for b in out.evidence]
    assert len(keys) == len(set(keys))  # no two kept blocks share a key
    for doc in {b.doc_id for b in out.evidence if b.doc_id}:
        assert sum(b.doc_id == doc for b in out.evidence) <= cap  # the cap is never exceeded
    ranks = [b.rank for b in out.evidence]
    assert ranks == sorted(ranks) and set(ranks) <= {c.rank for c in ranked}  # a subsequence of the ranking
    assert len(out.evidence) <= return_n
    for t in out.traces:  # a cap drop names exactly the cap's worth of the document's kept blocks
        if t.fate == "doc_cap":
            assert len(t.drop.by) == cap and all(k.startswith(f"{t.doc_id}#") for k in t.drop.by)
    assert [t.rank for t in out.traces] == [c.rank for c in ranked]  # every raw hit accounted for, once
    assert sum(t.fate == "kept" for t in out.traces) == len(out.evidence)
    again = postprocess(out.evidence, return_n=return_n, max_chunks_per_document=cap)
    assert again.evidence == out.evidence and all(t.fate == "kept" for t in again.traces)  # idempotent
    # Nothing is dropped that could have been kept: a dropped first occurrence really hit a limit.
    for t in out.traces:
        if t.fate == "beyond_return_n":
            assert len([k for k in out.traces if k.fate == "kept" and k.rank < t.rank]) == return_n

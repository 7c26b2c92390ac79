import pytest

from rag_core.identity import (
    chunk_index_of,
    doc_id_of,
    evidence_key,
    higher_is_better,
    normalize_chunk_index,
    to_candidate,
)
from rag_core.records import SearchHit


def hit(metadata: dict, id: str | None = "v1", content: str = "text", score: float = 0.5) -> SearchHit:
    return SearchHit(id=id, score=score, content=content, metadata=metadata)


@pytest.mark.parametrize("meta", [{"docId": "docA", "chunkIndex": 2}, {"doc_id": "docA", "chunk_index": 2},
                                  {"docId": "docA", "chunk_index": "2"}, {"doc_id": "docA", "chunkIndex": 2.0}])
def test_identity_extracted_from_metadata(meta: dict) -> None:
    """Spec: Identity extracted from metadata (docId or doc_id, chunkIndex or chunk_index)."""
    cand = to_candidate(hit(meta), rank=1)
    assert (cand.doc_id, cand.chunk_index, cand.evidence_key) == ("docA", 2, "docA#chunk-2")


def test_fallback_identity_without_chunk_index() -> None:
    """Spec: chunk index missing but vector id present -> vector:{id}."""
    cand = to_candidate(hit({"docId": "docA"}, id="449"), rank=1)
    assert cand.evidence_key == "vector:449" and cand.doc_id == "docA" and cand.chunk_index is None


def test_doc_id_falls_back_to_source_path() -> None:
    cand = to_candidate(hit({"_source": "runbooks\\cpu.md", "chunkIndex": 0}), rank=1)
    assert cand.doc_id == "runbooks/cpu.md" and cand.evidence_key == "runbooks/cpu.md#chunk-0"
    assert cand.source == "runbooks/cpu.md"


def test_preference_order_and_normalisation() -> None:
    meta = {"docId": "  a.md ", "doc_id": "b.md", "_source": "c.md", "chunkIndex": None, "chunk_index": 3}
    assert doc_id_of(meta) == "a.md" and chunk_index_of(meta) == 3
    assert doc_id_of({"docId": "", "doc_id": "b.md"}) == "b.md"
    assert doc_id_of({"docId": {"x": 1}}) is None


@pytest.mark.parametrize("value", [True, False, -1, 1.5, "x", "1.0", None, float("nan"), [1]])
def test_bad_chunk_indexes_count_as_missing(value) -> None:
    assert normalize_chunk_index(value) is None


def test_anonymous_hits_dedupe_by_content() -> None:
    a = evidence_key(None, None, None, "same words")
    assert a.startswith("content:") and a == evidence_key(None, 3, "", "same words")
    assert a != evidence_key(None, None, None, "other words")


def test_scores_are_higher_is_better() -> None:
    assert higher_is_better(0.8, "COSINE") == 0.8 and higher_is_better(12.5, "BM25") == 12.5
    assert higher_is_better(0.0, "L2") == 1.0 and higher_is_better(3.0, "L2") < higher_is_better(1.0, "L2")


def test_candidates_keep_rank_score_and_channels() -> None:
    h = SearchHit(id="7", score=0.03, content="c", metadata={"docId": "d", "chunkIndex": 1},
                  channels={"dense": (3, 0.71), "bm25": (1, 9.2)})
    cand = to_candidate(h, rank=4)
    assert cand.rank == 4 and cand.score == 0.03 and cand.hit_reasons == ("dense", "bm25")
    assert cand.channels["bm25"] == (1, 9.2)

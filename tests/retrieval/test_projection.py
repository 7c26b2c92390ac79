from rag_core.records import Candidate
from rag_core.retrieval.projection import Budgets, project


def block(key: str, source: str, content: str, score: float = 0.5) -> Candidate:
    doc, _, chunk = key.partition("#chunk-")
    return Candidate(rank=1, id=None, doc_id=doc, chunk_index=int(chunk), evidence_key=key, score=score,
                     content=content, source=source, metadata={}, hit_reasons=("dense",))


def test_same_source_different_evidence_keys_both_project() -> None:
    """Spec: two blocks with different evidence keys and the same source both appear."""
    out = project([block("docA#chunk-1", "docA", "one"), block("docA#chunk-2", "docA", "two")], Budgets())
    assert [(p.document_id, p.source) for p in out.items] == [("docA#chunk-1", "docA"), ("docA#chunk-2", "docA")]


def test_projected_document_id_is_chunk_scoped() -> None:
    """Spec: evidenceKey docA#chunk-2 -> projected document_id docA#chunk-2; source the document path."""
    [item] = project([block("docA#chunk-2", "runbooks/docA.md", "text")], Budgets()).items
    assert item.document_id == "docA#chunk-2" and item.source == "runbooks/docA.md"


def test_budgets_truncate_and_report() -> None:
    blocks = [block(f"d#chunk-{i}", "d", "x" * 500) for i in range(5)]
    out = project(blocks, Budgets(max_items=3, max_chars_per_item=300, max_total_chars=700))
    assert [p.document_id for p in out.items] == ["d#chunk-0", "d#chunk-1", "d#chunk-2"]
    assert all(p.truncated and "[truncated" in p.content for p in out.items)
    assert sum(len(p.content) for p in out.items) <= 700
    assert [len(p.content) for p in out.items] == [300, 300, 100]
    assert out.left_out == (("d#chunk-3", "projection max items (3)"), ("d#chunk-4", "projection max items (3)"))


def test_total_budget_leaves_out_rather_than_emitting_a_stub() -> None:
    blocks = [block("a#chunk-0", "a", "y" * 990), block("b#chunk-0", "b", "z" * 100)]
    out = project(blocks, Budgets(max_items=5, max_chars_per_item=1000, max_total_chars=1010))
    assert [p.document_id for p in out.items] == ["a#chunk-0"]
    assert out.left_out == (("b#chunk-0", "projection total characters (1010)"),)


def test_duplicate_keys_are_projected_once() -> None:
    out = project([block("a#chunk-0", "a", "one"), block("a#chunk-0", "a", "again")], Budgets())
    assert [p.content for p in out.items] == ["one"] and out.left_out == (("a#chunk-0", "duplicate evidence key"),)

"""The merge stage (rag_core/retrieval/merge.py) in real lookups: hits of one document whose chunks overlap or touch
become one block `doc#chunk-a..b` listing every hit, the others are dropped as merged into it; distant chunks and
other documents' chunks never merge, and two chunks that only share a source both stay (the spec's rule)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rag_core.records import DropKind
from rag_core.retrieval import KnowledgeRetriever, SearchOptions
from rag_core.retrieval.expand import ExpandParams
from rag_core.tokens import count_tokens
from tests.retrieval.memory import InMemorySearchPort

BM25 = SearchOptions(mode="bm25")


def paragraphs(doc: str, marks: dict[int, int]) -> str:
    """Ten paragraphs, one chunk each at size 80 (overlap 0); paragraph i says `zeta` marks[i] times."""
    return "\n\n".join(f"Paragraph {i} of {doc} is about the filter pump of tank number {i}." +
                       " zeta" * marks.get(i, 0) for i in range(10))


def lookup(texts: dict[str, str], query: str = "zeta", expand: str = "none", merge: bool = True,
           parent_max_size: int = 4000):
    port = InMemorySearchPort.from_texts(texts, 80, 0, BM25)
    assert all(len(port.document_chunks(d)) == 10 for d in texts)
    return KnowledgeRetriever(port).lookup(query, search=BM25, retrieve_k=20, return_n=20,
                                           max_chunks_per_document=10,
                                           expand=ExpandParams(expand, 1, parent_max_size, merge))


def test_adjacent_hits_merge_into_one_block_naming_their_range() -> None:
    result = lookup({"d.md": paragraphs("d", {3: 2, 4: 3, 5: 1})})
    assert [c.evidence_key for c in result.candidates] == ["d.md#chunk-4", "d.md#chunk-3", "d.md#chunk-5"]
    [block] = result.blocks
    assert block.key == "d.md#chunk-3..5" and (block.first, block.last) == (3, 5) and block.before == (3, 5)
    assert block.matched == ("d.md#chunk-4", "d.md#chunk-3", "d.md#chunk-5")  # best first
    assert block.hit.evidence_key == "d.md#chunk-4"
    assert [block.content[a:b] for a, b in block.highlights] == [c.content for c in
                                                                sorted(result.candidates, key=lambda c: c.chunk_index)]
    assert block.content.startswith("Paragraph 3 of d") and block.content.endswith("tank number 5. zeta")
    assert block.tokens == count_tokens(block.content)
    assert [c.evidence_key for c in result.evidence] == ["d.md#chunk-4"]  # the best hit of each block
    assert result.evidence_keys == list(block.matched)  # every hit the agent is given
    merged = [t for t in result.traces if t.drop is not None]
    assert [(t.evidence_key, t.drop.kind, t.status) for t in merged] == [  # type: ignore[union-attr]
        ("d.md#chunk-3", DropKind.MERGED, "merged_into d.md#chunk-3..5"),
        ("d.md#chunk-5", DropKind.MERGED, "merged_into d.md#chunk-3..5")]
    [item] = result.projection.items
    assert item.document_id == "d.md#chunk-3..5" and item.matched == block.matched
    out = result.to_dict()
    assert [b["key"] for b in out["blocks"]] == ["d.md#chunk-3..5"]
    assert [d["reason"] for d in out["dropped"]] == ["merged_into d.md#chunk-3..5"] * 2
    assert len(out["raw_hits"]) == len(out["evidence"]) + len(out["dropped"])


def test_overlapping_blocks_merge_and_their_key_names_the_hits_not_the_growth() -> None:
    result = lookup({"d.md": paragraphs("d", {2: 2, 4: 1})}, expand="neighbours")
    [block] = result.blocks  # 1..3 and 3..5 overlap at chunk 3
    assert block.key == "d.md#chunk-2..4" and (block.first, block.last) == (1, 5) and block.before == (2, 4)
    assert block.matched == ("d.md#chunk-2", "d.md#chunk-4") and block.grew == "neighbours"
    assert [t.status for t in result.traces] == ["kept", "merged_into d.md#chunk-2..4"]


@pytest.mark.parametrize("expand", ["none", "neighbours", "parent"])
def test_distant_chunks_of_one_document_both_stay(expand: str) -> None:
    """Spec: two different chunks of one document are never deduplicated because they share a source."""
    result = lookup({"d.md": paragraphs("d", {2: 2, 4: 1})}, expand=expand,
                    parent_max_size=100)  # parents: each chunk alone (a chunk is 60 to 75 characters)
    if expand == "neighbours":
        return  # their neighbours overlap: merged above
    assert [b.key for b in result.blocks] == ["d.md#chunk-2", "d.md#chunk-4"]  # a gap of one chunk: apart
    assert result.evidence_keys == ["d.md#chunk-2", "d.md#chunk-4"]
    assert all(t.status == "kept" for t in result.traces)
    assert [p.document_id for p in result.projection.items] == ["d.md#chunk-2", "d.md#chunk-4"]
    assert {p.source for p in result.projection.items} == {"d.md"}


def test_chunks_of_other_documents_never_merge() -> None:
    result = lookup({"a.md": paragraphs("a", {3: 2}), "b.md": paragraphs("b", {4: 1})})
    assert sorted(b.key for b in result.blocks) == ["a.md#chunk-3", "b.md#chunk-4"]
    assert all(t.status == "kept" for t in result.traces)


def test_merge_off_keeps_every_hit_its_own_block() -> None:
    result = lookup({"d.md": paragraphs("d", {3: 2, 4: 3, 5: 1})}, merge=False)
    assert [b.key for b in result.blocks] == ["d.md#chunk-4", "d.md#chunk-3", "d.md#chunk-5"]
    assert all(t.status == "kept" for t in result.traces)


def test_merge_keeps_the_rank_order_of_the_blocks() -> None:
    """A block is merged into the first kept block it touches; the blocks stay in their best hit's order."""
    result = lookup({"a.md": paragraphs("a", {7: 1, 1: 4}), "b.md": paragraphs("b", {5: 3}),
                     "c.md": paragraphs("c", {6: 2, 8: 1})})
    order = [c.evidence_key for c in result.candidates]
    assert order[0] == "a.md#chunk-1"
    keys = [b.key for b in result.blocks]
    assert sorted(keys) == ["a.md#chunk-1", "a.md#chunk-7", "b.md#chunk-5", "c.md#chunk-6", "c.md#chunk-8"]
    assert keys == [k for k in order if k in keys]


def test_a_hit_that_bridges_two_blocks_merges_all_three() -> None:
    """Blocks 0..2 and 4..6 apart; the third hit's block 2..4 touches both: one block, with no chunk shown twice."""
    result = lookup({"d.md": paragraphs("d", {1: 3, 5: 2, 3: 1})}, expand="neighbours")
    assert [c.evidence_key for c in result.candidates] == ["d.md#chunk-1", "d.md#chunk-5", "d.md#chunk-3"]
    [block] = result.blocks
    assert block.key == "d.md#chunk-1..5" and (block.first, block.last) == (0, 6)
    assert block.matched == ("d.md#chunk-1", "d.md#chunk-5", "d.md#chunk-3")  # best first
    assert all(block.content.count(f"Paragraph {i} ") == 1 for i in range(7))
    assert [t.status for t in result.traces] == ["kept", "merged_into d.md#chunk-1..5", "merged_into d.md#chunk-1..5"]


def test_a_chain_of_touching_hits_merges_whatever_their_order() -> None:
    result = lookup({"d.md": paragraphs("d", {2: 4, 6: 3, 4: 2, 3: 1, 5: 1})})
    [block] = result.blocks
    assert block.key == "d.md#chunk-2..6" and len(block.matched) == 5 and block.matched[0] == "d.md#chunk-2"


def test_a_merged_block_cut_by_the_budget_keeps_its_best_hit() -> None:
    # chunks 2..4 merged, the best hit last in their text: a budget that holds little more than one chunk keeps the
    # best hit's chunk (from it on, "… " before it), not the start of the block
    texts = {"d.md": paragraphs("d", {4: 3, 3: 1, 2: 1})}
    port = InMemorySearchPort.from_texts(texts, 80, 0, BM25)
    retriever = KnowledgeRetriever(port)
    whole = retriever.lookup("zeta", search=BM25, retrieve_k=20, return_n=20, max_chunks_per_document=10)
    [block] = whole.blocks
    assert block.matched[0] == "d.md#chunk-4" and (block.first, block.last) == (2, 4)
    best = port.document_chunks("d.md")[4].content
    budget = replace(whole.params.budgets, max_total_tokens=count_tokens(best) + 30)
    [item] = retriever.lookup("zeta", search=BM25, retrieve_k=20, return_n=20, max_chunks_per_document=10,
                              budgets=budget).projection.items
    assert item.truncated and item.content.startswith("… " + best[:20]) and "Paragraph 2 " not in item.content
    assert item.tokens <= budget.max_total_tokens

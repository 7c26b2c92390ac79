"""The projection: blocks -> the agent's items, deduplicated by evidence key only, within budgets that cut in the
documented order (rag_core/retrieval/projection.py), every cut marked and reported."""

from __future__ import annotations

from rag_core.chunking import chunk_text
from rag_core.records import Block, Candidate
from rag_core.retrieval.expand import ExpandParams, Rows, expand_hit, single
from rag_core.retrieval.projection import Budgets, project
from rag_core.tokens import TOKENIZER, count_tokens
from tests.test_parents import stored


def candidate(key: str, source: str, content: str, score: float = 0.5) -> Candidate:
    doc, _, chunk = key.partition("#chunk-")
    return Candidate(rank=1, id=None, doc_id=doc, chunk_index=int(chunk), evidence_key=key, score=score,
                     content=content, source=source, metadata={}, hit_reasons=("dense",))


def block(key: str, source: str, content: str, score: float = 0.5) -> Block:
    return single(candidate(key, source, content, score))


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


# --- budgets in tokens, in order ---------------------------------------------------------------

SENTENCE = "The payment gateway drains one zone before it restarts the workers of that zone. "
TEXT = "\n\n".join(SENTENCE * 3 for _ in range(8))  # 8 paragraphs of 3 sentences
WIDE = Budgets(max_items=10, max_chars_per_item=100_000, max_total_chars=1_000_000, max_tokens_per_item=100_000,
               max_total_tokens=1_000_000)


def test_block_tokens_stop_the_growth_first_so_the_projection_need_not_cut() -> None:
    rows = Rows(stored("d.md", chunk_text(TEXT, 300, 0)))
    hit = candidate("d.md#chunk-3", "d.md", rows.chunks[3].content)
    budget = count_tokens(rows.chunks[3].content) * 2 + 5
    grown = expand_hit(hit, rows, ExpandParams("neighbours", neighbours=3), budget)
    assert grown.stopped == "block_tokens" and grown.tokens <= budget and grown.last - grown.first == 1  # type: ignore[operator]
    out = project([grown], Budgets(max_tokens_per_item=budget))
    assert [(p.content, p.truncated, p.tokens) for p in out.items] == [(grown.content, False, grown.tokens)]
    assert out.tokenizer == TOKENIZER and out.tokens == grown.tokens


def test_max_items_cuts_before_the_token_budgets() -> None:
    blocks = [block(f"d#chunk-{i}", "d", SENTENCE * 4) for i in range(4)]
    each = blocks[0].tokens
    out = project(blocks, Budgets(max_items=2, max_chars_per_item=100_000, max_total_chars=1_000_000,
                                  max_tokens_per_item=100_000, max_total_tokens=each * 2))
    assert [p.document_id for p in out.items] == ["d#chunk-0", "d#chunk-1"] and out.tokens == each * 2
    assert out.left_out == (("d#chunk-2", "projection max items (2)"), ("d#chunk-3", "projection max items (2)"))


def test_an_item_is_cut_at_its_tokens_per_hit_with_a_marker() -> None:
    long = block("d#chunk-0", "d", SENTENCE * 20)
    out = project([long], Budgets(max_items=5, max_chars_per_item=100_000, max_total_chars=1_000_000,
                                  max_tokens_per_item=60, max_total_tokens=6000))
    [item] = out.items
    assert item.truncated and item.tokens <= 60 and item.tokens == count_tokens(item.content) == out.tokens
    assert item.content.endswith(f" …[truncated {long.tokens - count_tokens(item.content.split(' …[')[0])} tokens]")
    assert SENTENCE.strip() in item.content and not out.left_out


def test_the_total_tokens_cut_the_last_items_then_leave_them_out() -> None:
    blocks = [block(f"d#chunk-{i}", "d", SENTENCE * 3) for i in range(4)]
    each = blocks[0].tokens
    total = each * 2 + each // 2
    out = project(blocks, Budgets(max_items=10, max_chars_per_item=100_000, max_total_chars=1_000_000,
                                  max_tokens_per_item=100_000, max_total_tokens=total))
    assert [p.document_id for p in out.items] == ["d#chunk-0", "d#chunk-1", "d#chunk-2"]
    assert [p.truncated for p in out.items] == [False, False, True] and out.tokens <= total
    assert out.left_out == (("d#chunk-3", f"projection total tokens ({total})"),)
    assert [r.code for r in out.reasons] == ["projection.total_tokens"]


def test_the_total_tokens_are_reported_before_the_total_characters() -> None:
    blocks = [block("a#chunk-0", "a", SENTENCE * 3), block("b#chunk-0", "b", SENTENCE * 3)]
    first = blocks[0]
    out = project(blocks, Budgets(max_items=5, max_chars_per_item=100_000, max_total_chars=len(first.content),
                                  max_tokens_per_item=100_000, max_total_tokens=first.tokens))
    assert [p.document_id for p in out.items] == ["a#chunk-0"]
    assert out.left_out == (("b#chunk-0", f"projection total tokens ({first.tokens})"),)


def test_a_merged_block_has_a_budget_per_hit_and_lists_its_hits() -> None:
    one = block("d#chunk-2", "d", SENTENCE * 10)
    merged = Block(key="d#chunk-2..3", hit=one.hit, matched=("d#chunk-2", "d#chunk-3"), content=SENTENCE * 10,
                   first=2, last=3, before=(2, 3), tokens=one.tokens, section="Ops")
    budget = Budgets(max_items=5, max_chars_per_item=100_000, max_total_chars=1_000_000,
                     max_tokens_per_item=one.tokens // 2 + 1, max_total_tokens=6000)
    [alone] = project([one], budget).items
    [both] = project([merged], budget).items
    assert alone.truncated and not both.truncated
    assert both.document_id == "d#chunk-2..3" and both.matched == ("d#chunk-2", "d#chunk-3")
    assert project([one], WIDE).items[0].matched == ()


def test_an_item_is_never_only_the_cut_marker() -> None:
    # 20 tokens left of the total: too few for text and its "…[truncated N tokens]": left out, not a stub
    words = " ".join(f"word{i}" for i in range(200))
    first = block("d#chunk-0", "d", words)
    second = block("d#chunk-5", "d", words)
    out = project([first, second], Budgets(max_chars_per_item=10**6, max_total_chars=10**7,
                                           max_total_tokens=first.tokens + 20))
    assert [p.document_id for p in out.items] == ["d#chunk-0"]
    assert [k for k, _ in out.left_out] == ["d#chunk-5"] and out.reasons[0].code == "projection.total_tokens"

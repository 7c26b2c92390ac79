"""The Context view's pure builders (ui/blocks.py, ui/html.marked_html): the exact text escaped with the matched
chunks marked, a block's growth and what stopped it in words, a cited member's chunk alone, the token bar."""

from __future__ import annotations

import html
import re

from hypothesis import given
from hypothesis import strategies as st

from ui.blocks import block_html, budget_html, cited_block, growth_text, highlights_for, stopped_text
from ui.html import marked_html

TEXT = "# Runbook\n\n<script>alert(1)</script> chunk three & four\n\nchunk five"
THREE, FOUR = TEXT.index("<script>"), TEXT.index("chunk five")
BLOCK = {"key": "a.md#chunk-3..4", "matched": ["a.md#chunk-4", "a.md#chunk-3"], "range": [2, 4],
         "matched_range": [3, 4], "grew": "parent", "stopped": "block_tokens", "tokens": 42,
         "section": "Runbook > Diagnosis", "content": TEXT, "highlights": [[THREE, FOUR - 2], [FOUR, len(TEXT)]]}


def visible(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def test_marked_text_is_exact_escaped_and_overlapping_spans_are_one_mark():
    out = marked_html(TEXT, [[THREE, THREE + 20], [THREE + 10, FOUR - 2], [FOUR, len(TEXT)]], title="matched")
    assert visible(out) == TEXT and "<script>" not in out and "&lt;script&gt;" in out
    assert out.count('<mark class="matched"') == 2
    assert re.findall(r"<mark[^>]*>([^<]*)</mark>", out)[1] == "chunk five"


@given(st.text(max_size=80), st.lists(st.tuples(st.integers(-5, 90), st.integers(-5, 90)), max_size=4))
def test_any_text_and_spans_keep_the_text(text: str, spans: list[tuple[int, int]]) -> None:
    assert visible(marked_html(text, spans)) == text


def test_a_block_says_how_it_grew_what_stopped_it_and_marks_its_chunks():
    assert growth_text(BLOCK) == "chunks 3–4 → chunks 2–4, parent section 'Runbook > Diagnosis'"
    assert stopped_text(BLOCK, 1000) == "Growth stopped at the block's token budget (1,000 tokens, " \
                                        "`rag.block-tokens`)."
    neighbours = {**BLOCK, "grew": "neighbours", "stopped": "disabled"}
    assert growth_text(neighbours, {"expand": {"neighbours": 1}}) == "chunks 3–4 → chunks 2–4, 1 neighbouring " \
                                                                     "chunk on each side"
    assert stopped_text(neighbours) == "Growth stopped at a disabled chunk (it never grows across one)."
    alone = {**BLOCK, "key": "a.md#chunk-3", "matched": ["a.md#chunk-3"], "range": [3, 3], "matched_range": [3, 3],
             "grew": "none", "stopped": "unavailable"}
    assert growth_text(alone) == "chunk 3 (not expanded)"
    assert stopped_text(alone) == "Not expanded: this search cannot read whole documents."
    gap = {**BLOCK, "matched": ["a.md#chunk-5", "a.md#chunk-3"], "range": [3, 5], "matched_range": [3, 5]}
    assert growth_text(gap) == "chunks 3, 5, parent section 'Runbook > Diagnosis'"  # merged, not grown
    out = block_html(BLOCK, block_budget=1000, left_out={"reason": "projection total tokens (6000)"})
    assert "2 hits merged into this block:" in out and "Left out: projection total tokens (6000)" in out
    assert out.count('<mark class="matched"') == 2 and "&lt;script&gt;" in out and "<script>" not in out
    assert '<span class="block-section">Runbook &gt; Diagnosis</span>' in out


def test_a_cited_member_marks_its_own_chunk_and_resolves_to_its_block():
    assert highlights_for(BLOCK, "a.md#chunk-3") == [[THREE, FOUR - 2]]  # marks in chunk order, keys best first
    assert highlights_for(BLOCK, "a.md#chunk-4") == [[FOUR, len(TEXT)]]
    assert highlights_for(BLOCK, BLOCK["key"]) == BLOCK["highlights"]
    lookup = {"blocks": [BLOCK]}
    assert cited_block([lookup], "a.md#chunk-4") == (BLOCK, lookup)
    assert cited_block([lookup], "a.md#chunk-3..4") == (BLOCK, lookup)
    assert cited_block([lookup], "a.md#chunk-2") is None  # inside the block's text, but no hit of it


def test_the_token_bar_names_the_budget_and_the_tokenizer():
    out = budget_html({"tokens": 1500, "budget": 6000, "tokenizer": "qwen"})
    assert 'data-used="1500" data-budget="6000"' in out and "width:25.0%" in out
    assert "1,500 of 6,000 tokens" in visible(out) and "counted with qwen" in visible(out)

"""The debugger's hit list marks the BM25 terms each hit matched (`matched_terms` of `search --json`) and shows them
with their shares of the hit's BM25 score (ui/hits.py)."""

from __future__ import annotations

import re

from ui.hits import hit_list_html, hit_row_html, snippet_html

HIT = {"rank": 1, "fate": "kept", "evidence_key": "runbooks/slow_zh.md#chunk-0", "score": 9.8,
       "content": "慢查詢的處理：先看執行計劃。Slow queries are logged.",
       "matched_terms": ["慢", "查询", "处理"], "term_shares": {"慢": 0.37, "处理": 0.32, "查询": 0.31},
       "term_scores": {"慢": 3.6, "处理": 3.1, "查询": 3.0}, "bm25_exact": True}


def marked(html: str) -> list[str]:
    return re.findall(r"<mark>(.*?)</mark>", html)


def test_a_row_marks_the_matched_terms_in_the_traditional_text_and_lists_them_by_share() -> None:
    row = hit_row_html(HIT)
    assert marked(row) == ["慢", "查詢", "處理"]
    terms = re.search(r'<span class="hit-terms"[^>]*>(.*?)</span>', row)
    assert terms is not None
    assert re.sub(r"<[^>]+>", "", terms.group(1)) == "terms: 慢 37% · 处理 32% · 查询 31%"


def test_a_term_the_hit_does_not_hold_is_neither_marked_nor_listed() -> None:
    hit = {**HIT, "matched_terms": ["处理"], "term_shares": {"处理": 1.0}, "term_scores": {"处理": 3.1}}
    row = hit_row_html(hit)
    assert marked(row) == ["處理"] and "慢 " not in row


def test_a_hit_without_terms_has_no_terms_span_and_no_marks() -> None:
    row = hit_row_html({**HIT, "matched_terms": [], "term_shares": {}, "term_scores": {}})
    assert "hit-terms" not in row and marked(row) == []


def test_unscored_terms_are_listed_without_shares_and_english_marks_other_endings() -> None:
    hit = {**HIT, "content": "Slow queries are logged; a slow query log", "matched_terms": ["slow", "query"],
           "term_shares": {}, "term_scores": {}}
    row = hit_row_html(hit)
    assert marked(row) == ["Slow", "queries", "slow", "query"]
    terms = re.search(r'<span class="hit-terms".*?</span>', row)
    assert terms is not None and "%" not in terms.group(0)


def test_the_list_marks_each_hit_by_its_own_terms_and_escapes_the_text() -> None:
    other = {**HIT, "rank": 2, "content": "<b>disk</b> full", "matched_terms": ["disk"], "term_shares": {"disk": 1.0}}
    html = hit_list_html([HIT, other])
    assert html.count('class="hit-row"') == 2 and "<b>disk</b> full" not in html
    assert "<mark>disk</mark>" in html
    assert snippet_html("x" * 400 + " 查詢 here", ["查询"]).startswith("… ")  # cut around the first marked term

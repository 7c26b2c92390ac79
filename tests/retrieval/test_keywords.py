"""The keyword channel (retrieval/keywords.py) without Milvus: the query's BM25 terms, the terms a hit contains, the
per-term scores of a scorer (a dict here) turned into shares, and where the terms are marked in a text."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from rag_core.retrieval import keywords
from rag_core.retrieval.keywords import HitTerms, own_scores, query_terms, score_hits, term_spans


class DictScorer:
    """A BM25TermScorer answering from a table (term -> row -> score), recording what it was asked."""

    bm25_terms: tuple[str, ...] = ()
    stop_words: tuple[str, ...] = ()

    def __init__(self, table: dict[str, dict[str, float]]) -> None:
        self.table = table
        self.asked: list[tuple[tuple[str, ...], tuple[str, ...]]] = []

    def bm25_term_scores(self, terms: Sequence[str], ids: Sequence[str]) -> dict[str, dict[str, float]]:
        self.asked.append((tuple(terms), tuple(ids)))
        return {t: {r: s for r, s in self.table.get(t, {}).items() if r in ids} for t in terms}


class FailingScorer:
    bm25_terms: tuple[str, ...] = ()
    stop_words: tuple[str, ...] = ()

    def bm25_term_scores(self, terms: Sequence[str], ids: Sequence[str]) -> dict[str, dict[str, float]]:
        raise RuntimeError("the store went away\nwith a second line")


def test_an_english_query_loses_its_stop_words_and_punctuation_and_is_lower_cased():
    assert query_terms("When does the HighCPUUsage alert fire?") == ("when", "does", "highcpuusage", "alert", "fire")


def test_a_chinese_query_is_cut_as_jieba_search_mode_cuts_it():
    # search mode also emits a long word's dictionary words; punctuation goes, Chinese particles stay (Milvus's stop
    # words are English only)
    assert query_terms("慢查询怎么处理？") == ("慢", "查询", "怎么", "处理")
    assert query_terms("中华人民共和国") == ("中华", "华人", "人民", "共和", "共和国", "中华人民共和国")


def test_a_traditional_query_gives_the_simplified_terms():
    assert query_terms("向量檢索的索引") == query_terms("向量检索的索引") == ("向量", "检索", "的", "索引")


def test_repeated_terms_are_listed_once():
    assert query_terms("disk disk full") == ("disk", "full")


def test_shares_come_from_the_scorer_and_add_up_to_the_hits_bm25_score():
    scorer = DictScorer({"disk": {"a": 2.0, "b": 1.0}, "full": {"a": 1.0}, "logs": {}})
    found = score_hits("disk full logs", [("a", "disk is full", 3.0), ("b", "a disk", 1.0), ("c", "nothing", None)],
                       scorer)
    assert found.scored and found.terms == ("disk", "full", "logs")
    assert len(scorer.asked) == 1 and scorer.asked[0][1] == ("a", "b", "c")  # one request for every hit
    a, b, c = found.of("a"), found.of("b"), found.of("c")
    assert a.matched == ("disk", "full") and a.shares == {"disk": 0.6667, "full": 0.3333} and a.exact is True
    assert b.matched == ("disk",) and b.shares == {"disk": 1.0} and b.exact is True
    assert c.matched == () and c.shares == {} and c.exact is None  # a term in no chunk: matched nowhere
    assert found.to_dict()["exact"] == 2 and found.to_dict()["checked"] == 2


def test_a_sum_that_misses_the_bm25_score_is_not_called_exact():
    found = score_hits("disk full", [("a", "disk full", 5.0)], DictScorer({"disk": {"a": 2.0}, "full": {"a": 1.0}}))
    assert found.of("a").exact is False and found.of("a").total == 3.0


def test_a_repeated_query_term_counts_as_often_as_milvus_counts_it():
    found = score_hits("disk disk", [("a", "disk", 4.0)], DictScorer({"disk": {"a": 2.0}}))
    assert found.of("a").scores == {"disk": 4.0} and found.of("a").exact is True


def test_a_compound_term_is_scored_without_the_parts_milvus_cut_it_into():
    # "共和国" searched alone is cut into 共和 and 共和国 by search mode: its own part is the rest
    terms = ("共和", "共和国")
    alone = {"共和": {"a": 1.0}, "共和国": {"a": 3.5}}
    assert own_scores(terms, alone) == {"共和": {"a": 1.0}, "共和国": {"a": 2.5}}


def test_without_a_scorer_the_terms_are_found_in_the_text_unscored():
    found = score_hits("慢查詢 disk running", [("a", "慢查询 runs on the disk", None), ("b", "磁盘", None)], None)
    assert not found.scored
    assert found.of("a").matched == ("慢", "查询", "disk", "running") and found.of("a").shares == {}
    assert found.of("b").matched == ()


def test_a_failing_scorer_leaves_the_texts_answer(caplog):
    found = score_hits("disk", [("a", "disk", 1.0)], FailingScorer())
    assert not found.scored and found.of("a").matched == ("disk",)
    assert "the store went away" in caplog.text and "second line" not in caplog.text


def test_an_unknown_hit_has_no_terms():
    assert keywords.Keywords((), {}, scored=False).of("nope") == HitTerms(())
    assert keywords.Keywords((), {}, scored=False).of(None).to_dict() == {
        "matched_terms": [], "term_shares": {}, "term_scores": {}, "bm25_exact": None}


@pytest.mark.parametrize(("text", "terms", "marked"), [
    ("Disk is FULL, disks fill", ["disk", "full"], ["Disk", "FULL", "disks"]),
    ("the service runs and running", ["running"], ["runs", "running"]),  # the stemmer's match, estimated
    ("慢查詢的處理", ["查询", "处理"], ["查詢", "處理"]),  # Traditional text marked by its Simplified terms
    ("中华人民共和国", ["共和", "共和国"], ["共和国"]),  # the longer term first, never overlapping
    ("nothing here", [], []),
])
def test_term_spans_mark_what_bm25_matched(text, terms, marked):
    assert [text[a:b] for a, b in term_spans(text, terms)] == marked


@pytest.mark.parametrize(("text", "tokens"), [
    # what Milvus Lite 2.5.1 was seen to match (each token searched alone against a row holding the text)
    ("less than 5% of normal", ["less", "than", "5%", "normal"]),
    ("covid-19 x86_64 v2.5 3.14159", ["covid-19", "x86_64", "v2.5", "3.14159"]),
    ("end-of-line foo&bar -dash", ["end", "line", "foo", "bar", "dash"]),
    ("使用GPU加速covid-19的检测", ["使用", "gpu", "加速", "covid-19", "的", "检测"]),
])
def test_the_cut_keeps_what_jieba_rs_keeps_whole(text, tokens):
    assert keywords.analyse(text) == tokens

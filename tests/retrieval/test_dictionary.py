"""A knowledge base's own BM25 dictionary and stop words (rag_core.dictionary), the terms people are shown for them
(retrieval.keywords), and the dictionary suggested from headings and code (retrieval.dictionary): pure, no store."""

from __future__ import annotations

import pytest

from rag_core.dictionary import MAX_TERM_CHARS, MAX_TERMS, alias, found, parse_terms, with_aliases
from rag_core.errors import RagError
from rag_core.retrieval.dictionary import suggest
from rag_core.retrieval.keywords import analyse, query_terms

TERMS = ("缓存预热", "zephyrctl", "kubectl rollout undo", "order-service")


def test_terms_are_read_one_per_line_or_by_commas_without_comments_or_repeats() -> None:
    text = ("# product terms\n缓存预热\n緩存預熱\nzephyrctl, ZephyrCtl ,kubectl rollout undo\n\n"
            "  order-service  # a service\n")
    assert parse_terms(text) == TERMS  # Traditional and letter case fold to one term, the first spelling kept


@pytest.mark.parametrize(("text", "message"), [
    ("x" * (MAX_TERM_CHARS + 1), "dictionary, line 1: 'xxxxxxxxxxxxxxxxxxxx'… is longer than 64 characters."),
    ("ok\nbad\tterm", "dictionary, line 2: 'bad\\tterm' holds a control character."),
    ("\n".join(f"t{i}" for i in range(MAX_TERMS + 1)), f"dictionary: {MAX_TERMS + 1} terms; at most {MAX_TERMS}."),
])
def test_bad_terms_are_one_line_naming_the_line(text: str, message: str) -> None:
    with pytest.raises(RagError) as caught:
        parse_terms(text)
    assert str(caught.value) == message


def test_terms_are_found_whole_at_word_edges_in_any_script_or_case() -> None:
    text = "執行緩存預熱後用 ZephyrCtl, then kubectl rollout undo; not zephyrctl2 nor my-order-service-x"
    assert found(text, TERMS) == ["缓存预热", "zephyrctl", "kubectl rollout undo"]
    assert found("nothing here", TERMS) == [] and found("缓存预热", ()) == []


def test_an_alias_is_one_stable_token_per_folded_term() -> None:
    token = alias("缓存预热")
    assert token == alias("緩存預熱") and token != alias("缓存") and token.isalnum() and token.endswith("9")
    assert with_aliases("先做缓存预热", TERMS) == f"先做缓存预热\n{token}"
    assert with_aliases("no term", TERMS) == "no term"


def test_the_terms_shown_hold_the_dictionary_terms_and_lose_the_stop_words() -> None:
    query = "缓存预热的步骤 order-service"
    plain = query_terms(query)
    assert "缓存预热" not in plain and "的" in plain
    own = query_terms(query, TERMS, ("的",))
    assert own == (*[t for t in plain if t != "的"], "缓存预热", "order-service")
    assert analyse("order-service order-service", TERMS).count("order-service") == 1  # once, as its alias is


def test_suggestions_come_from_headings_and_code_in_two_chunks_or_more() -> None:
    chunks = [
        ("运维手册 > 内存泄漏排查", "Run `kubectl rollout undo` on order-service; see node_exporter."),
        ("运维手册 > 内存泄漏排查 > 步骤", "Check order-service heap; node_exporter metrics."),
        ("发布规范", "Use `kubectl rollout undo` to go back; once_only_here."),
    ]
    found_terms = {s.term: (s.kind, s.chunks) for s in suggest(chunks)}
    assert found_terms["kubectl rollout undo"] == ("code", 2)
    assert found_terms["order-service"] == ("code", 2) and found_terms["node_exporter"] == ("code", 2)
    assert found_terms["内存泄漏排查"] == ("heading", 2)
    assert "once_only_here" not in found_terms and "发布规范" not in found_terms  # in one chunk only
    assert [s.term for s in suggest(chunks, limit=1)] == [next(iter(found_terms))]

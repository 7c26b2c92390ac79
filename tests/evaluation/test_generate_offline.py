"""The offline generator on the sample knowledge base (examples/kb in Milvus Lite, the real local embedder):
deterministic for a seed, in Chinese and in English, questions a person would type, every answer a whole sentence
quoted from its chunk; and a generated set runs through the retrieval evaluation at once, on the knowledge base it
came from and on one chunked differently."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from rag_core.bootstrap import factories
from rag_core.config import load_settings
from rag_core.errors import EvaluationError
from rag_core.evaluation import Grid, load_user_set, run_evaluation
from rag_core.evaluation.generate import OFFLINE_WARNING, generate_offline, generate_test_set
from rag_core.evaluation.testsets import read_test_set


@pytest.fixture(scope="module")
def biz(sample_kbs):
    return sample_kbs["biz"]


def chunk_text(wb, key: str) -> str:
    doc_id, _, index = key.rpartition("#chunk-")
    return next(c.content for c in wb.store.get_chunks(doc_id) if c.chunk_index == int(index))


@pytest.mark.parametrize(("lang", "pinned", "kinds"), [
    ("zh", [("title", "关于慢查询的定义，MySQL 慢查询处理运行手册是怎么说的？", "runbooks/slow_query_zh.md"),
            ("sentence", "如果你在确认告警之后发现自己无法处理，应该怎么办？", "policies/oncall_zh.md")],
     {"title": 5, "sentence": 3}),
    ("en", [("title", "What are the rules for escalation and follow-up in the Disk Space Low runbook?",
             "runbooks/disk_full.md"),
            ("title", "When is a postmortem required?", "policies/incident_response.md")],
     {"title": 7, "sentence": 1}),
])
def test_offline_items_are_deterministic_for_a_seed_in_chinese_and_english(biz, lang, pinned, kinds) -> None:
    result = generate_offline(biz.store, size=8, seed=0, lang=lang, kb_name="biz")
    assert generate_offline(biz.store, size=8, seed=0, lang=lang, kb_name="biz").items == result.items
    assert [(i.kind, i.query, i.relevant[0]) for i in result.items[:2]] == pinned
    assert len(result.items) == 8 and result.rejected == {} and result.warnings == (OFFLINE_WARNING,)
    assert {i.lang for i in result.items} == {lang} and {i.generator for i in result.items} == {"offline"}
    assert Counter(i.kind for i in result.items) == kinds
    for item in result.items:
        assert item.relevant == (item.source.rpartition("#chunk-")[0],) and item.should_answer
        assert item.answer in chunk_text(biz, item.source)  # verbatim: `eval` finds it as it is
    docs = Counter(i.relevant[0] for i in result.items)
    assert max(docs.values()) - min(docs.values()) <= 1  # round-robin: no document more than its share
    other = generate_offline(biz.store, size=8, seed=1, lang=lang, kb_name="biz")
    assert [i.source for i in other.items] != [i.source for i in result.items]
    assert result.meta()["generator"] == "offline" and result.meta()["model"] is None


EN_ASKS = ("What", "How", "Why", "When", "Where", "Which", "Who", "Is", "Are", "Does", "Do", "Can", "Should", "May",
           "Must")
ZH_OPENS = ("如何", "怎样", "为什么", "关于", "如果", "假如", "若", "一旦", "哪")
ZH_ASKS = ("什么", "怎么", "怎样", "哪些", "如何", "谁", "吗", "多少", "多久")


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_offline_items_read_as_questions_with_answers_that_end_a_sentence(biz, lang) -> None:
    """Every item of a large set: a question a person would type (its question form, its question mark) whose
    answer is a whole sentence of its chunk, not keywords and not a line cut off mid-sentence."""
    result = generate_offline(biz.store, size=30, seed=3, lang=lang, kb_name="biz")
    assert len(result.items) == 30
    for item in result.items:
        query, answer = item.query, item.answer
        assert answer is not None and answer in chunk_text(biz, item.source), item
        if lang == "zh":
            assert query.endswith("？") and "?" not in query, query
            assert query.startswith(ZH_OPENS) or any(word in query for word in ZH_ASKS), query
            assert answer.rstrip("”」』）)`*").endswith(("。", "！", "？")), answer
        else:
            assert query.endswith("?") and query.split()[0] in EN_ASKS, query
            assert answer.rstrip("\"')]`*").endswith((".", "!", "?")), answer
            assert answer[0].isupper() or answer[0] in "`\"'(", answer  # not the tail of a sentence
        assert len(query) < 160 and query != answer, query


def test_a_size_the_knowledge_base_cannot_give_is_one_line(biz) -> None:
    with pytest.raises(EvaluationError, match=r"^The knowledge base 'biz' can give at most 10 items \(10 documents "
                                              r"with 10 chunks that hold a sentence to quote, at most 1 per "
                                              r"document \(--per-doc-max\)\): ask for --size 10 or fewer or raise "
                                              r"--per-doc-max\.$"):
        generate_test_set(biz.store, size=11, per_doc_max=1, kb_name="biz")


def test_a_generated_set_runs_through_eval_on_its_knowledge_base_and_on_one_chunked_differently(
        sample_kbs, two_kbs: Path, tmp_path: Path) -> None:
    biz, small = sample_kbs["biz"], sample_kbs["small"]
    result = generate_offline(biz.store, size=12, seed=0, kb_name="biz")
    path = result.write(tmp_path / "biz-offline.jsonl")
    assert read_test_set(path).meta["warnings"] == [OFFLINE_WARNING]
    eval_set = load_user_set(path)
    settings = load_settings(data_dir=two_kbs, env={}, config_file=None)
    run = run_evaluation(eval_set, Grid.from_settings(settings, mode=["bm25", "dense"]), settings,
                         factories=factories(), knowledge_bases=[biz, small])
    assert run.warnings == []  # every relevant doc_id is in both knowledge bases
    rows = {(p.point.kb, p.point.mode): p.metrics for p in run.points}
    assert set(rows) == {("biz", "bm25"), ("biz", "dense"), ("small", "bm25"), ("small", "dense")}
    for metrics in rows.values():
        assert metrics["queries"] == 12 and metrics["queries_with_answers"] == 12
    # questions made of the text's words: keyword search finds their documents (the warning's point)
    assert rows[("biz", "bm25")]["recall@5"] == pytest.approx(1.0)
    assert rows[("biz", "bm25")]["recall@5"] >= rows[("biz", "dense")]["recall@5"]
    # the answers are quotes of biz's 800-character chunks: small's 300-character chunks hold fewer of them whole
    assert rows[("small", "bm25")]["answer_recall"] <= rows[("biz", "bm25")]["answer_recall"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_follow_up_items_ask_after_a_first_question_and_cannot_be_answered_alone(biz, lang, tmp_path) -> None:
    """A share of the set are follow-ups, spread over it (3 of 12: items 4, 8 and 12): the first question names the
    topic and is the item's history; the follow-up names none of it (so the offline rewrite takes it for a
    follow-up and borrows that topic), and its answer is a sentence of the same chunk. The set round-trips through
    a file and review with its history."""
    from rag_core.evaluation.generate.filters import stands_alone
    from rag_core.evaluation.testsets import review_item, write_test_set
    from rag_core.retrieval.rewrite import OfflineRewriter, is_follow_up, topic_terms

    plain = generate_offline(biz.store, size=12, seed=0, lang=lang, kb_name="biz")
    result = generate_offline(biz.store, size=12, seed=0, lang=lang, follow_ups=0.25, kb_name="biz")
    assert generate_offline(biz.store, size=12, seed=0, lang=lang, follow_ups=0.25, kb_name="biz").items == result.items
    assert [i.id for i in result.items if i.kind == "follow_up"] == ["g004", "g008", "g012"]
    assert result.items[:3] == plain.items[:3]  # the other places are the questions they were
    assert result.meta()["follow_ups"] == 3 and result.meta()["follow_up_share"] == 0.25
    assert not any(i.history for i in plain.items)
    for item in (i for i in result.items if i.kind == "follow_up"):
        [turn] = item.history
        first, follow_up = turn.content, item.query
        assert turn.role == "user" and first.endswith("？" if lang == "zh" else "?") and follow_up != first
        assert not stands_alone(follow_up, first) and is_follow_up(follow_up)
        assert not set(topic_terms(first)) & set(topic_terms(follow_up)), (first, follow_up)
        assert item.answer in chunk_text(biz, item.source) and item.relevant == (item.source.rpartition("#")[0],)
        rewrite = OfflineRewriter().rewrite(follow_up, item.history)
        assert rewrite.outcome == "rewritten" and rewrite.borrowed, rewrite
    path = write_test_set(tmp_path / "conv.jsonl", result.items, result.meta())
    lines = path.read_text(encoding="utf-8").splitlines()
    assert '"history": [{"role": "user", "content": ' in lines[3] and "history" not in lines[0]
    back = read_test_set(path)
    assert back.items == result.items
    edited = review_item(back.items, "g004", query=back.items[3].query + " ")  # unchanged text: not edited
    edited = review_item(edited, "g004", query="And how long does that last?")
    assert edited[3].history == result.items[3].history and edited[3].review == "edited"
    assert len(load_user_set(path).queries) == 12  # `eval` reads the set as it is


def test_a_follow_up_share_outside_0_to_1_is_one_line(biz) -> None:
    with pytest.raises(EvaluationError, match=r"--follow-up-share must lie in \[0, 1\] \(got 1.5\)"):
        generate_offline(biz.store, size=4, follow_ups=1.5)

"""Offline mode on the sample knowledge base: same events, extractive answer, real citations."""

from __future__ import annotations

import re

import numpy as np
import pytest

from rag_core.agent import ContentEvent, DoneEvent, Session, ToolCallEvent, ToolResultEvent
from rag_core.agent.offline import compose, pick_quotes, sentences, terms
from rag_core.bootstrap import build_agent
from rag_core.errors import EmbeddingError
from rag_core.languages import CJK, LATIN, language_of
from rag_core.records import Projected

from .conftest import with_settings


def quotes_of(text: str) -> list[tuple[str, str]]:
    return re.findall(r'^- [“"](.+)[”"] \[([^\]]+)\]$', text, flags=re.M)


def squash(text: str) -> str:
    return re.sub(r"[\s|]+", "", text)


@pytest.mark.parametrize("question, label, expected_doc", [
    ("How do I find what is filling the disk when the disk is full?", "**Offline mode**", "runbooks/disk_full.md"),
    ("慢查询告警触发后应该先看什么？", "**离线模式**", "runbooks/slow_query_zh.md"),
])
def test_offline_answers_quote_the_evidence_with_citations(kb, question, label, expected_doc) -> None:
    agent = build_agent(with_settings(kb, {"chat.provider": "auto"}), env={})  # no key anywhere: offline
    assert agent.mode == "offline" and "offline" in agent.describe()
    session = Session()
    events = list(agent.run(question, session))

    assert [e.type for e in events[:2]] == ["tool_call", "tool_result"]
    assert {e.type for e in events[2:-1]} == {"content"} and events[-1].type == "done"
    call, result, done = events[0], events[1], events[-1]
    assert isinstance(call, ToolCallEvent) and call.arguments == {"query": question}
    assert isinstance(result, ToolResultEvent) and result.lookup is not None
    assert result.lookup.evidence_keys == kb.retriever.lookup(question).evidence_keys  # the one lookup path
    assert isinstance(done, DoneEvent) and done.mode == "offline" and done.stop_reason == "answer"
    assert done.text == "".join(e.text for e in events if isinstance(e, ContentEvent))

    assert done.text.startswith(label) and "DASHSCOPE_API_KEY" in done.text
    quotes = quotes_of(done.text)
    assert 1 <= len(quotes) <= 4
    content = {p.document_id: p.content for p in result.lookup.projection.items}
    for sentence, key in quotes:
        assert key in content and squash(sentence.removesuffix("…")) in squash(content[key])  # quoted as written
    assert done.citations == tuple(dict.fromkeys(k for _, k in quotes))
    assert done.unverified_citations == ()
    assert any(k.startswith(expected_doc) for k in done.citations)
    assert session.turns[0].mode == "offline" and session.turns[0].answer == done.text


@pytest.mark.parametrize("question, expected_doc", [
    ("磁盘使用率超过 90% 怎么办？", "runbooks/disk_full.md"),  # a Chinese question, an English runbook
    ("How do I find out whether a database query is slow?", "runbooks/slow_query_zh.md"),  # and the reverse
])
def test_offline_answers_quote_a_document_in_the_other_language(kb, question, expected_doc) -> None:
    agent = build_agent(with_settings(kb, {"chat.provider": "offline"}), env={})
    assert agent.embedder is kb.embedder
    done = list(agent.run(question))[-1]
    assert isinstance(done, DoneEvent) and done.mode == "offline"
    assert done.text.startswith("**离线模式**" if language_of(question) == CJK else "**Offline mode**")
    quotes = quotes_of(done.text)
    assert 1 <= len(quotes) <= 4 and len({q for q, _ in quotes}) == len(quotes)
    assert any(key.startswith(expected_doc) for _, key in quotes)
    assert any(language_of(q) != language_of(question) for q, _ in quotes)
    # By shared words alone, the same evidence gives no quote from that document.
    items = kb.retriever.lookup(question).projection.items
    assert not any(q.document_id.startswith(expected_doc) for q in pick_quotes(question, items))


def test_the_embedder_picks_a_sentence_sharing_no_word(local_embedder) -> None:
    items = [Projected("menu.md#chunk-0", "menu.md", "The canteen posts the lunch menu every Monday morning.", 0.9),
             Projected("disk.md#chunk-0", "disk.md", "磁盘满了的时候，先清理旧的日志文件。", 0.5)]
    question = "How do I free up storage space?"
    assert [q.document_id for q in pick_quotes(question, items)] == ["menu.md#chunk-0"]  # no word shared: the opening
    quotes = pick_quotes(question, items, embedder=local_embedder)
    assert [q.document_id for q in quotes] == ["disk.md#chunk-0", "menu.md#chunk-0"]
    assert quotes[0].score > quotes[1].score
    assert quotes_of(compose(question, items, max_quotes=1, embedder=local_embedder)) == [
        ("磁盘满了的时候，先清理旧的日志文件。", "disk.md#chunk-0")]


class FailingEmbedder:
    name, dim = "test:failing", 4

    def embed_query(self, text: str) -> np.ndarray:
        raise EmbeddingError("the embedding service is down")

    def embed_documents(self, texts) -> np.ndarray:
        raise EmbeddingError("the embedding service is down")


def test_an_embedder_that_fails_leaves_the_choice_to_shared_words(caplog) -> None:
    items = [Projected("a.md#chunk-0", "a.md", "Unrelated words here about lunch menus. The disk is full when usage "
                                                "passes 95 percent.", 0.9),
             Projected("b.md#chunk-1", "b.md", "To free disk space, truncate large log files instead of deleting "
                                               "them.", 0.5)]
    quotes = pick_quotes("How to free disk space?", items, embedder=FailingEmbedder())
    assert quotes == pick_quotes("How to free disk space?", items)
    assert "test:failing could not embed the evidence sentences (the embedding service is down)" in caplog.text


def test_sentences_skip_code_headings_and_table_rules() -> None:
    chunk = (
        "sudo lsof +L1 | sort -k7 -n | tail\n```\n\n## Heading\n\nIf `df` reports the disk as full, a process "
        "holds a deleted file. Restart it to release the space.\n\n```bash\ndf -h /var\n```\n"
        "| Alert | Meaning |\n|---|---|\n| `DiskSpaceLow` | less than 15% free |\n"
        "- 先确认是哪个目录占用了空间。然后清理日志。"
    )
    assert sentences(chunk) == [
        "If `df` reports the disk as full, a process holds a deleted file.", "Restart it to release the space.",
        "Alert | Meaning", "`DiskSpaceLow` | less than 15% free", "先确认是哪个目录占用了空间。", "然后清理日志。"]


def test_terms_for_chinese_english_and_mixed() -> None:
    assert {"disk", "full"} <= terms("Is the disk full?") and "the" not in terms("Is the disk full?")
    assert {"查询", "告警", "处理"} <= terms("慢查询告警怎么处理") and "怎么" not in terms("慢查询告警怎么处理")
    assert {"cpu", "使用率"} <= terms("CPU 使用率高")
    assert {"node_cpu_seconds_total", "cpu", "seconds"} <= terms("node_cpu_seconds_total")
    assert language_of("CPU 使用率高怎么办") == CJK and language_of("What does HighCPUUsage mean?") == LATIN


def test_quotes_are_ranked_by_relevance_then_evidence_rank() -> None:
    items = [Projected("a.md#chunk-0", "a.md", "Unrelated words here about lunch menus. The disk is full when usage "
                                                "passes 95 percent.", 0.9),
             Projected("b.md#chunk-1", "b.md", "To free disk space, truncate large log files instead of deleting "
                                               "them.", 0.5)]
    quotes = pick_quotes("How to free disk space?", items)
    assert [(q.document_id, q.text[:20]) for q in quotes] == [("b.md#chunk-1", "To free disk space, "),
                                                             ("a.md#chunk-0", "The disk is full whe")]


def test_nothing_found_says_so() -> None:
    assert compose("What is the capital of Mars?", []).startswith("**Offline mode** (no chat model configured): "
                                                                   "the knowledge base has nothing")
    assert "离线模式" in compose("火星的首都是哪里？", [])

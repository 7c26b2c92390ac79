"""The rewrite stage (issue 35): the offline rewrite on pronoun, ellipsis and topic-switch questions in both
languages; the model's rewrite through the loopback chat server (a good rewrite, one adding facts, a 500, a hang
past the deadline); the stage in the lookup over the sample knowledge base; the QueryRewriter contract."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_core.clients.openai_chat import ChatModelConfig, OpenAIChatModel
from rag_core.errors import RetrievalError
from rag_core.records import ConversationTurn
from rag_core.retrieval import KnowledgeRetriever
from rag_core.retrieval.rewrite import (
    ModelRewriter,
    OfflineRewriter,
    added_facts,
    is_follow_up,
    parse_history,
    read_history_file,
)
from tests.contracts.remote import GENEROUS, HANG
from tests.contracts.rewriter import QueryRewriterContract
from tests.fakes.rewriter import ScriptedRewriter
from tests.servers import Reply
from tests.servers.chat import Completion, OpenAIChatServer

KEY = "sk-rewrite-SECRET-3c9e10"
DISK = parse_history(["user: How do I free disk space on a node?",
                      "assistant: Delete old logs under /var/log [runbooks/disk_full.md#chunk-1]."])
DISK_ZH = parse_history(["user: 磁盘使用率超过 90% 怎么办？"])
OFFLINE = OfflineRewriter()


def user(*questions: str) -> tuple[ConversationTurn, ...]:
    return tuple(ConversationTurn("user", q) for q in questions)


# ------------------------------------------------------------------------------------------ offline rewrite
@pytest.mark.parametrize("question", ["Which command shows it?", "How long does that take?", "Who owns this?",
                                      "What about the timeout?", "And the default?", "它的默认值是多少？",
                                      "这个怎么查看？", "那超时呢？", "还有别的办法吗？"])
def test_short_questions_that_refer_back_or_name_no_topic_are_follow_ups(question: str) -> None:
    assert is_follow_up(question)


@pytest.mark.parametrize("question", ["How do I roll back a release of the order service?",
                                      "When does the HighCPUUsageCritical alert fire?",
                                      "What is the on-call rotation for the payment gateway team?",
                                      "发布流程是怎样的？", "慢查询应该怎么排查？", "向量检索服务的索引类型有哪些？",
                                      "Check that the replica of the order database has caught up with the primary "
                                      "after a failover, and tell me what to do when it has not"])
def test_questions_with_a_topic_of_their_own_stand_alone(question: str) -> None:
    assert not is_follow_up(question)


def test_a_pronoun_follow_up_borrows_the_earlier_questions_topic_in_english() -> None:
    done = OFFLINE.rewrite("Which command shows it?", DISK)
    assert done.outcome == "rewritten" and done.by == "offline" and done.turns == 2
    assert done.searched == "Which command shows it? (free disk space node)"
    assert done.borrowed == ("free", "disk", "space", "node")


def test_a_pronoun_follow_up_borrows_the_earlier_questions_topic_in_chinese() -> None:
    done = OFFLINE.rewrite("它的第一步是什么？", DISK_ZH)
    assert done.outcome == "rewritten"
    assert done.searched == "它的第一步是什么？（磁盘 使用率 超过 90%）"


def test_an_elliptical_follow_up_borrows_too_in_both_languages() -> None:
    assert OFFLINE.rewrite("What about the timeout?", user("How long does the order service keep an "
                                                           "Idempotency-Key?")).searched == (
        "What about the timeout? (order service keep Idempotency-Key)")  # borrowed as written there
    assert OFFLINE.rewrite("那超时呢？", user("订单服务的幂等键保存多久？")).searched.startswith("那超时呢？（订单")


def test_a_topic_switch_carries_nothing_over_in_both_languages() -> None:
    for question, history in (("How do I roll back a release of the order service?", DISK),
                              ("慢查询应该怎么排查？", DISK_ZH)):
        done = OFFLINE.rewrite(question, history)
        assert (done.outcome, done.searched, done.borrowed) == ("kept", question, ())
        assert done.detail == "it stands alone"


def test_the_headings_the_previous_answer_cited_are_borrowed() -> None:
    history = (DISK[0], ConversationTurn("assistant", DISK[1].content, cited=("Disk Full > Clean up",)))
    done = OFFLINE.rewrite("Which command shows it?", history)
    assert done.searched == "Which command shows it? (free disk space node; Disk Full > Clean up)"
    assert done.borrowed[-1] == "Disk Full > Clean up"


def test_a_follow_up_naming_a_topic_of_its_own_borrows_no_headings() -> None:
    # "And the inodes?" asks what the cited section did not say: its heading would pull the search back to it
    history = (DISK[0], ConversationTurn("assistant", DISK[1].content, cited=("Disk Full > Clean up",)))
    done = OFFLINE.rewrite("And the inodes?", history)
    assert done.searched == "And the inodes? (free disk space node)"
    assert "Disk Full > Clean up" not in done.borrowed


@pytest.mark.parametrize("question", ["它会在夜里呼叫吗？", "如果正在增长的就是其中一个，该怎么办？"])
def test_a_chinese_reference_inside_a_word_is_seen(question: str) -> None:
    # jieba cuts 它会 as one word, and 其中一个 names no topic
    assert is_follow_up(question)
    assert OFFLINE.rewrite(question, DISK_ZH).outcome == "rewritten"


def test_a_follow_up_of_a_follow_up_reaches_back_to_the_topic() -> None:
    history = user("How do I free disk space on a node?", "Which command shows it?")
    assert OFFLINE.rewrite("Is it safe?", history).searched == "Is it safe? (free disk space node)"


def test_without_an_earlier_question_nothing_is_rewritten() -> None:
    done = OFFLINE.rewrite("Which command shows it?", (ConversationTurn("assistant", "Hi! Ask me anything."),))
    assert (done.outcome, done.searched, done.detail) == ("kept", "Which command shows it?", "no earlier question")


# -------------------------------------------------------------------------------------------- history input
def test_history_is_read_from_messages_lines_and_files(tmp_path: Path) -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": [
        {"type": "text", "text": "How do I free disk space?"}]}, {"role": "assistant", "content": "Delete logs."},
        {"role": "tool", "content": "{}"}, {"role": "user", "content": "   "}]
    assert parse_history(messages) == (ConversationTurn("user", "How do I free disk space?"),
                                       ConversationTurn("assistant", "Delete logs."))
    assert read_history_file("user: How do I free disk space?\nassistant: Delete logs.\nThen rotate them.\n", "h") == (
        ConversationTurn("user", "How do I free disk space?"),
        ConversationTurn("assistant", "Delete logs.\nThen rotate them."))
    assert read_history_file('{"role": "user", "content": "a"}\n{"role": "assistant", "content": "b"}\n', "h") == (
        ConversationTurn("user", "a"), ConversationTurn("assistant", "b"))


@pytest.mark.parametrize(("items", "message"), [
    (["moderator: hello"], 'history, turn 1: write it as "user: ..." or "assistant: ...".'),
    ([{"role": "critic", "content": "x"}], "history, turn 1: role must be user or assistant (got 'critic')."),
    ([42], "history, turn 1: expected an object with role and content."),
])
def test_malformed_history_is_one_line_naming_the_turn(items, message) -> None:
    with pytest.raises(RetrievalError) as caught:
        parse_history(items)
    assert str(caught.value) == message


def test_a_history_file_line_that_is_not_json_is_named() -> None:
    with pytest.raises(RetrievalError, match=r"^turns.jsonl, line 2: not JSON"):
        read_history_file('{"role": "user", "content": "a"}\n{"role": \n', "turns.jsonl")


# ---------------------------------------------------------------------------------------------- model rewrite
@pytest.fixture
def chat_server():
    yield from OpenAIChatServer(api_key=KEY).serve()


def model_rewriter(server: OpenAIChatServer, deadline: float = GENEROUS, **config) -> ModelRewriter:
    cfg = ChatModelConfig(provider="openai", base_url=server.base_url, model=server.models[0],
                          api_key_env="TEST_CHAT_KEY", **{"timeout": GENEROUS, "max_retries": 0, **config})
    return ModelRewriter(OpenAIChatModel(cfg, KEY, sleep=lambda s: None, jitter=lambda: 0.0), deadline=deadline,
                         model_name=server.models[0])


def test_the_model_rewrites_in_the_questions_language_at_temperature_0(chat_server) -> None:
    chat_server.reply(Completion.say("Which command shows the disk usage of a node?"),
                      Completion.say("改写后的问题：磁盘使用率超过 90% 时第一步是什么？"))
    done = model_rewriter(chat_server).rewrite("Which command shows it?", DISK)
    assert (done.outcome, done.searched, done.by) == ("rewritten", "Which command shows the disk usage of a node?",
                                                      "test-chat")
    zh = model_rewriter(chat_server).rewrite("它的第一步是什么？", DISK_ZH)
    assert (zh.outcome, zh.searched) == ("rewritten", "磁盘使用率超过 90% 时第一步是什么？")
    first, second = chat_server.chat_requests()
    assert first["temperature"] == 0.0 and "standalone" in first["messages"][0]["content"]
    assert "How do I free disk space on a node?" in first["messages"][1]["content"]
    assert "[runbooks/disk_full.md#chunk-1]" in first["messages"][1]["content"]
    assert "改写" in second["messages"][0]["content"]
    assert "磁盘使用率超过 90% 怎么办？" in second["messages"][1]["content"]


def test_a_rewrite_that_adds_facts_or_loses_a_code_is_rejected_and_the_original_searched(chat_server) -> None:
    chat_server.reply(Completion.say("Which command shows the disk usage of PostgreSQL on node-7?"),
                      Completion.say("What does the alert mean?"))
    added = model_rewriter(chat_server).rewrite("Which command shows it?", DISK)
    assert (added.outcome, added.searched) == ("model_rejected", "Which command shows it?")
    assert added.detail.startswith("adds node-7, postgresql, which the conversation does not say")
    lost = model_rewriter(chat_server).rewrite("What does HighCPUUsageCritical mean?", DISK)
    assert lost.outcome == "model_rejected" and "loses highcpuusagecritical" in lost.detail


def test_facts_are_numbers_codes_identifiers_and_names() -> None:
    history = user("磁盘使用率超过 90% 怎么办？")
    assert added_facts("磁盘使用率超过 90% 时如何清理 /var/log？", "它怎么清理？", history) == (["/var/log"], [])
    assert added_facts("How do I free disk space on a node?", "How?", DISK) == ([], [])


def test_a_server_error_searches_the_original_and_says_so(chat_server, sample_wb) -> None:
    chat_server.reply(chat_server.server_error(500))
    retriever = sample_wb.retriever.with_rewriter(model_rewriter(chat_server))
    result = retriever.lookup("Which command shows it?", history=list(DISK))
    assert result.rewrite is not None and result.rewrite.outcome == "model_failed"
    assert result.searched == "Which command shows it?" and "HTTP 500" in result.rewrite.detail
    (warning,) = result.warning_phrases
    assert warning.code == "warning.rewrite_failed" and warning.params["model"] == "test-chat"
    assert result.to_dict()["rewrite"]["outcome"] == "model_failed"


def test_a_hang_past_the_deadline_searches_the_original(chat_server) -> None:
    chat_server.always(Reply.json(200, {}, delay=HANG))
    done = model_rewriter(chat_server, deadline=2.0).rewrite("Which command shows it?", DISK)
    assert (done.outcome, done.searched) == ("model_failed", "Which command shows it?")


def test_rewrite_model_without_a_model_is_a_clear_error(sample_wb) -> None:
    with pytest.raises(RetrievalError, match=r"^rewrite = model needs a chat model"):
        KnowledgeRetriever(sample_wb.retriever.port).lookup("Which command shows it?", history=DISK,
                                                           rewrite="model")


# --------------------------------------------------------------------------------------- the stage in a lookup
def test_the_follow_up_finds_the_runbook_only_with_the_conversation(sample_wb) -> None:
    retriever = KnowledgeRetriever(sample_wb.retriever.port, sample_wb.retriever.defaults)
    alone = retriever.lookup("Which command shows it?")
    followed = retriever.lookup("Which command shows it?", history=list(DISK))
    assert alone.rewrite is None and alone.to_dict()["rewrite"] is None
    assert followed.rewrite is not None and followed.rewrite.outcome == "rewritten"
    assert followed.query == "Which command shows it?" and followed.searched != followed.query
    assert followed.evidence[0].doc_id == "runbooks/disk_full.md" != alone.evidence[0].doc_id
    assert "rewrite" in followed.timings and "rewrite" not in alone.timings
    zh_alone = retriever.lookup("它的第一步是什么？")
    zh_followed = retriever.lookup("它的第一步是什么？", history=list(DISK_ZH))
    assert "runbooks/disk_full.md" in {c.doc_id for c in zh_followed.evidence} - {c.doc_id for c in zh_alone.evidence}
    assert followed.params.to_dict()["history_turns"] == 2


def test_the_cited_chunk_is_read_as_its_heading(sample_wb) -> None:
    chunk = next(c for c in sample_wb.store.get_chunks("runbooks/disk_full.md") if c.chunk_index == 1)
    heading = str(chunk.metadata.get("headingPath") or chunk.metadata.get("title"))
    result = KnowledgeRetriever(sample_wb.retriever.port).lookup("Which command shows it?", history=list(DISK))
    assert result.rewrite is not None and heading in result.rewrite.borrowed


def test_rewrite_off_searches_the_question_as_asked_and_says_so(sample_wb) -> None:
    retriever = KnowledgeRetriever(sample_wb.retriever.port)
    off = retriever.lookup("Which command shows it?", history=list(DISK), rewrite="off")
    assert off.rewrite is not None and (off.rewrite.outcome, off.searched) == ("off", "Which command shows it?")
    assert off.evidence_keys == retriever.lookup("Which command shows it?").evidence_keys


def test_hits_fetched_for_one_conversation_are_not_assembled_for_another(sample_wb) -> None:
    retriever = KnowledgeRetriever(sample_wb.retriever.port)
    params = retriever.params(history=list(DISK))
    fetched = retriever.fetch("Which command shows it?", params)
    assert retriever.assemble(fetched, params).rewrite == fetched.rewrite
    with pytest.raises(RetrievalError, match="fetched with other search settings"):
        retriever.assemble(fetched, retriever.params())


def test_a_model_rewriter_on_the_retriever_is_used_in_auto_mode_and_not_in_offline_mode(sample_wb) -> None:
    scripted = ScriptedRewriter({"Which command shows it?": "Which command shows the disk usage of a node?"})
    retriever = KnowledgeRetriever(sample_wb.retriever.port, rewriter=scripted)
    assert retriever.lookup("Which command shows it?", history=list(DISK)).searched == (
        "Which command shows the disk usage of a node?")
    offline = retriever.lookup("Which command shows it?", history=list(DISK), rewrite="offline")
    assert offline.rewrite is not None and offline.rewrite.by == "offline" and len(scripted.asked) == 1


# ------------------------------------------------------------------------------------------------ contract
class TestOfflineRewriterContract(QueryRewriterContract):
    @pytest.fixture
    def rewriter(self):
        return OfflineRewriter()


class TestModelRewriterContract(QueryRewriterContract):
    @pytest.fixture
    def rewriter(self, chat_server):
        chat_server.reply(*[Completion.say("Which command shows the free disk space on a node?")] * 5)
        return model_rewriter(chat_server)


class TestScriptedRewriterContract(QueryRewriterContract):
    @pytest.fixture
    def rewriter(self):
        return ScriptedRewriter({"Which command shows it?": "Which command shows the free disk space?"})

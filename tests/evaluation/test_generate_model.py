"""The model generator against the loopback chat server speaking the OpenAI protocol, through the real
`openai` SDK (`ChatModel`): kept items, every rejection by reason, malformed replies asked again, a 429 then
success, a 500 until the item's deadline, failures that end the run, items that should not be answerable
checked by the one lookup path, and the set written complete and read by `eval` as it is.

The knowledge base is six one-chunk documents in the in-memory store (it passes the store contract), so each
scripted reply is computed from the passage the request carries."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rag_core.clients.openai_chat import ChatModelConfig
from rag_core.clients.openai_chat import OpenAIChatModel as ChatModel
from rag_core.errors import EvaluationError
from rag_core.evaluation import load_user_set
from rag_core.evaluation.generate import PROMPT_VERSION, generate_test_set, generate_with_model, prompts
from rag_core.evaluation.testsets import read_test_set
from rag_core.ingest import Ingestor
from rag_core.retrieval import KnowledgeRetriever, LookupParams, StoreSearchPort
from rag_core.store.memory import InMemoryChunkStore
from tests.fakes.embedder import FakeEmbedder
from tests.servers.chat import Completion, OpenAIChatServer

KEY = "sk-gen-SECRET-41d7c2a9e0"

DOCS = {  # doc_id -> (text, question, answer): each a single chunk
    "cpu.md": ("The HighCPUUsageCritical alert fires when utilisation stays above 95% for 5 minutes, and it always "
               "pages the primary on-call engineer.", "When is the critical CPU alert raised?",
               "when utilisation stays above 95% for 5 minutes"),
    "disk.md": ("When a node's disk is full, never delete anything under /var/lib/mysql or /var/lib/milvus; clear "
                "old container images with crictl rmi --prune instead.", "Which folders must be left alone on a "
                "full disk?", "never delete anything under /var/lib/mysql or /var/lib/milvus"),
    "orders.md": ("An order that stays in PENDING_PAYMENT for 30 minutes is cancelled automatically by the "
                  "order-timeout job.", "How long can an unpaid order wait before it is dropped?", "30 minutes"),
    "keys.md": ("The order service stores each Idempotency-Key for 24 hours, after which a repeated request creates a "
                "new order.", "For how long are idempotency keys remembered?", "for 24 hours"),
    "oncall_zh.md": ("P1 故障的告警必须在 5 分钟内由主值班工程师确认，否则自动升级给副值班工程师。",
                     "一级故障多久内要确认告警？", "5 分钟内由主值班工程师确认"),
    "release_zh.md": ("每次发布都需要在发布系统中创建发布单，写明版本号、变更内容、影响范围和回滚方案。",
                      "上线之前要准备什么单据？", "创建发布单"),
}


@pytest.fixture(scope="module")
def kb() -> tuple[InMemoryChunkStore, KnowledgeRetriever]:
    store, embedder = InMemoryChunkStore(), FakeEmbedder()
    store.open(embedder.name, embedder.dim)
    reports = Ingestor(store, embedder, max_size=400, overlap=0).ingest_uploads(
        [(doc_id, text.encode("utf-8")) for doc_id, (text, _, _) in DOCS.items()])
    assert [r.chunks for r in reports] == [1] * len(DOCS)
    retriever = KnowledgeRetriever(StoreSearchPort(store, embedder), LookupParams(retrieve_k=5, return_n=3))
    return store, retriever


@pytest.fixture
def server():
    yield from OpenAIChatServer(api_key=KEY).serve()


class FakeTime:
    """A clock that the model's backoff sleeps move forward, shared by the model and the generator."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def chat_model(server: OpenAIChatServer, time: FakeTime, key: str = KEY, **config: Any) -> ChatModel:
    config = {"timeout": 30.0, "max_retries": 2, **config}
    cfg = ChatModelConfig(provider="openai", base_url=server.base_url, model=server.models[0],
                          api_key_env="TEST_CHAT_KEY", **config)
    return ChatModel(cfg, key, sleep=time.sleep, jitter=lambda: 0.0, clock=time.clock)


def doc_of(request: Any) -> str:
    """The document a question request is about (its user message names it)."""
    return re.search(r"^(?:Document|文档): (\S+)$", request.json["messages"][1]["content"], re.M).group(1)


def kind_of(request: Any) -> str:
    system = request.json["messages"][0]["content"]
    for kind, texts in (("question", prompts.QUESTION), ("unanswerable", prompts.UNANSWERABLE),
                        ("check", prompts.CHECK), ("follow_up", prompts.FOLLOW_UP)):
        if system in texts.values():
            return kind
    raise AssertionError(system[:60])


def say(value: Any) -> Completion:
    return Completion.say(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))


def responder(overrides: dict[str, Callable[[Any], Any]] | None = None) -> Callable[[Any], Any]:
    """Answers every question request with the document's (question, answer), unless `overrides` has the doc."""
    def reply(request: Any) -> Any:
        doc = doc_of(request)
        if overrides and doc in overrides:
            return overrides[doc](request)
        _, question, answer = DOCS[doc]
        return say({"question": question, "answer": answer})
    return reply


def script(server: OpenAIChatServer, reply: Callable[[Any], Any], n: int = 40) -> None:
    server.reply(*([reply] * n))


def generate(kb, server, time: FakeTime, size: int = 6, **options: Any):
    store, retriever = kb
    options.setdefault("unanswerable", 0.0)
    return generate_with_model(store, chat_model(server, time, **options.pop("model", {})), size=size, seed=3,
                               lookup=retriever.lookup, kb_name="biz", clock=time.clock, **options)


def test_kept_items_quote_their_chunk_in_its_language_at_temperature_0(kb, server, tmp_path: Path) -> None:
    script(server, responder())
    seen = []
    result = generate(kb, server, FakeTime(), progress=seen.append)
    assert result.rejected == {} and result.tried == 6 and result.shortfall == 0 and result.warnings == ()
    by_doc = {i.relevant[0]: i for i in result.items}
    assert set(by_doc) == set(DOCS)
    for doc_id, (text, question, answer) in DOCS.items():
        item = by_doc[doc_id]
        assert (item.query, item.answer, item.source) == (question, answer, f"{doc_id}#chunk-0")
        assert answer in text and item.generator == "model" and item.kind == "question" and item.should_answer
        assert item.lang == ("zh" if doc_id.endswith("_zh.md") else "en")
    bodies = server.chat_requests()
    assert all(b["temperature"] == 0.0 for b in bodies)
    zh = next(b for b in bodies if "oncall_zh.md" in b["messages"][1]["content"])
    assert zh["messages"][0]["content"] == prompts.QUESTION["zh"]
    assert DOCS["oncall_zh.md"][0] in zh["messages"][1]["content"]
    assert [i.id for i in result.items] == [f"g00{n}" for n in range(1, 7)]
    assert [(p.stage, p.done, p.total) for p in seen if p.stage == "generating"][-1] == ("generating", 6, 6)
    assert [p.done for p in seen if p.stage == "reading"] == [1, 2, 3, 4, 5, 6]
    meta = result.meta()
    assert (meta["generator"], meta["model"], meta["prompt_version"], meta["seed"]) == (
        "model", f"test-chat via OpenAI-compatible ({server.base_url})", PROMPT_VERSION, 3)
    assert KEY not in json.dumps(meta)

    path = result.write(tmp_path / "biz.jsonl")  # eval FILE works at once
    eval_set = load_user_set(path)
    assert [q.text for q in eval_set.queries] == [i.query for i in result.items]
    assert read_test_set(path).meta["kept"] == 6


def test_the_same_seed_and_model_give_the_same_set_and_another_seed_another_order(kb, server) -> None:
    script(server, responder(), 80)
    first = generate(kb, server, FakeTime(), size=3)
    again = generate(kb, server, FakeTime(), size=3)
    assert first.items == again.items
    other = generate_with_model(kb[0], chat_model(server, FakeTime()), size=3, seed=4, unanswerable=0.0)
    assert [i.source for i in other.items] != [i.source for i in first.items]


def _copy_sentence(request: Any) -> Completion:
    text = DOCS["cpu.md"][0]
    return say({"question": text.split(", and")[0] + "?", "answer": "always pages the primary on-call engineer"})


@pytest.mark.parametrize(("overrides", "rejected"), [
    ({"cpu.md": lambda r: say({"question": "When is the critical CPU alert raised?",
                               "answer": "when CPU stays over 95 percent for five minutes"})}, "answer_not_in_chunk"),
    ({"cpu.md": _copy_sentence}, "copied_question"),
    ({"keys.md": lambda r: say({"question": DOCS["orders.md"][1], "answer": "24 hours"}),
      "orders.md": lambda r: say({"question": DOCS["orders.md"][1], "answer": "30 minutes"})}, "duplicate"),
    ({"release_zh.md": lambda r: say({"question": "What must be created before a release?", "answer": "创建发布单"})},
     "wrong_language"),
])
def test_each_rejection_is_counted_by_its_reason_and_the_walk_goes_on(kb, server, overrides, rejected) -> None:
    script(server, responder(overrides))
    result = generate(kb, server, FakeTime(), size=6)
    assert result.rejected == {rejected: 1} and len(result.items) == 5 and result.tried == 6
    assert result.shortfall == 1 and "Asked for 6 items, made 5" in result.warnings[0]
    assert f"1 {rejected.replace('_', ' ')}" in result.warnings[0]


def test_a_reply_that_is_not_the_json_asked_for_is_asked_again_then_counted_as_malformed(kb, server) -> None:
    attempts: dict[str, int] = {}

    def garbage_then_json(request: Any) -> Completion:  # disk.md: prose, then a fenced object
        attempts["disk.md"] = attempts.get("disk.md", 0) + 1
        if attempts["disk.md"] == 1:
            return say("Sure! Here is a good question about disks.")
        _, question, answer = DOCS["disk.md"]
        return say("```json\n" + json.dumps({"question": question, "answer": answer}) + "\n```")

    script(server, responder({"disk.md": garbage_then_json,
                              "cpu.md": lambda r: say('{"question": "When is the alert raised?"}'),  # no answer
                              "keys.md": lambda r: say(["not", "an", "object"])}))
    result = generate(kb, server, FakeTime(), size=6, retries=2)
    assert result.rejected == {"malformed": 2} and len(result.items) == 4
    assert any(i.relevant == ("disk.md",) for i in result.items)
    failures = {f["source"]: f for f in result.failures}
    assert set(failures) == {"cpu.md#chunk-0", "keys.md#chunk-0"}
    assert failures["cpu.md#chunk-0"]["detail"] == '"answer" is missing or not a non-empty string'
    assert failures["keys.md#chunk-0"]["replies"] == ['["not", "an", "object"]'] * 3  # 1 + 2 retries
    asked_again = [b for b in server.chat_requests() if "disk.md" in b["messages"][1]["content"]][-1]["messages"]
    assert [m["role"] for m in asked_again] == ["system", "user", "assistant", "user"]
    assert asked_again[3]["content"].startswith("That was not the JSON object asked for: the reply is not JSON")


def test_a_429_then_success_gives_the_item(kb, server) -> None:
    limited: set[str] = set()

    def once_limited(request: Any) -> Any:
        if "cpu.md" not in limited:
            limited.add("cpu.md")
            return server.rate_limited(retry_after="2")
        return responder()(request)

    script(server, responder({"cpu.md": once_limited}))
    time = FakeTime()
    result = generate(kb, server, time, size=6)
    assert result.rejected == {} and len(result.items) == 6 and time.sleeps == [2.0]  # Retry-After honoured


def test_a_500_until_the_items_deadline_is_one_counted_failure_not_the_end_of_the_run(kb, server) -> None:
    script(server, responder({"cpu.md": lambda r: server.server_error(500)}), 80)
    time = FakeTime()
    result = generate(kb, server, time, size=6, item_deadline=3.0, model={"max_retries": 10})
    assert result.rejected == {"model_failed": 1} and len(result.items) == 5
    [failure] = result.failures
    assert failure["source"] == "cpu.md#chunk-0" and failure["kind"] == "timeout"
    assert time.sleeps == [0.5, 1.0, 2.0]  # retried with backoff until the deadline passed, not 10 times
    assert failure["detail"].startswith("no answer within the item's deadline (3 s): ")


def test_retries_used_up_on_500s_are_a_counted_server_failure(kb, server) -> None:
    script(server, responder({"orders.md": lambda r: server.server_error(503)}), 80)
    result = generate(kb, server, FakeTime(), size=6)
    assert result.rejected == {"model_failed": 1} and result.failures[0]["kind"] == "server"
    assert sum(1 for b in server.chat_requests() if "orders.md" in b["messages"][1]["content"]) == 3


def test_failures_no_item_would_escape_end_the_run_with_one_line(kb, server, tmp_path: Path) -> None:
    with pytest.raises(EvaluationError) as info:
        generate_with_model(kb[0], chat_model(server, FakeTime(), key="sk-wrong-key-000000"), size=2,
                            unanswerable=0.0)
    assert "TEST_CHAT_KEY" in str(info.value) and "sk-wrong" not in str(info.value) and "\n" not in str(info.value)
    assert len(server.chat_requests()) == 1  # not once per chunk
    port = server.port
    server.stop()
    with pytest.raises(EvaluationError, match="connect|refused|running") as info:
        cfg = ChatModelConfig(provider="openai", base_url=f"http://127.0.0.1:{port}/v1", model="test-chat",
                              timeout=30.0, max_retries=0)
        generate_with_model(kb[0], ChatModel(cfg, KEY), size=2, unanswerable=0.0)
    assert not list(tmp_path.iterdir())


def test_no_item_kept_is_an_error_not_an_empty_set(kb, server) -> None:
    script(server, lambda r: say("no"))
    with pytest.raises(EvaluationError, match=r"No item was kept from 6 chunks asked about \(rejected: malformed 6\)"):
        generate(kb, server, FakeTime(), size=6, retries=0)


def test_bad_options_are_one_line_before_any_call(kb, server) -> None:
    store, retriever = kb
    model = chat_model(server, FakeTime())
    with pytest.raises(EvaluationError, match=r"can give at most 6 items .* ask for --size 6 or fewer"):
        generate_with_model(store, model, size=7, unanswerable=0.0)
    with pytest.raises(EvaluationError, match=r"at most 6 items .* ask for --size 8 or fewer"):
        generate_with_model(store, model, size=9, unanswerable=0.25, lookup=retriever.lookup)  # 7 to quote, 2 not
    with pytest.raises(EvaluationError, match="checked by a lookup"):
        generate_with_model(store, model, size=4, unanswerable=0.5)
    with pytest.raises(EvaluationError, match="--lang 'fr'"):
        generate_with_model(store, model, size=4, lang="fr")
    with pytest.raises(EvaluationError, match="--generator model needs a chat model"):
        generate_test_set(store, size=4, generator="model")
    assert server.chat_requests() == []


def test_a_forced_language_asks_for_questions_in_it(kb, server) -> None:
    def chinese(request: Any) -> Completion:
        doc = doc_of(request)
        questions = {"cpu.md": "CPU 严重告警在什么条件下触发？", "disk.md": "磁盘满时哪些目录不能删？",
                     "orders.md": "未支付的订单多久会被取消？", "keys.md": "幂等键会保存多久？"}
        return say({"question": questions.get(doc, DOCS[doc][1]), "answer": DOCS[doc][2]})

    script(server, chinese)
    result = generate(kb, server, FakeTime(), size=6, lang="zh")
    assert len(result.items) == 6 and {i.lang for i in result.items} == {"zh"}
    assert all(b["messages"][0]["content"] == prompts.QUESTION["zh"] for b in server.chat_requests())


def test_should_not_be_answerable_items_are_checked_by_the_lookup(kb, server) -> None:
    store, retriever = kb
    asked = {"n": 0}
    unanswerable_questions = ["What is the refund window for payments made in euros?",
                              "When does the HighCPUUsageCritical alert fire?"]

    def reply(request: Any) -> Any:
        kind = kind_of(request)
        if kind == "question":
            return responder()(request)
        if kind == "unanswerable":
            asked["n"] += 1
            return say({"question": unanswerable_questions[(asked["n"] - 1) % 2]})
        question = re.search(r"^Question: (.*)$", request.json["messages"][1]["content"], re.M).group(1)
        if "refund" in question:
            return say({"answered": False, "quote": ""})
        return say({"answered": True, "quote": "The HighCPUUsageCritical alert fires when utilisation stays above "
                                               "95% for 5 minutes"})

    script(server, reply, 80)
    result = generate(kb, server, FakeTime(), size=6, unanswerable=0.34)  # 2 of 6
    answerable = [i for i in result.items if i.should_answer]
    unanswerable = [i for i in result.items if not i.should_answer]
    assert len(answerable) == 4
    assert [(i.query, i.relevant, i.answers, i.source, i.kind) for i in unanswerable] == [
        ("What is the refund window for payments made in euros?", (), (), None, "unanswerable")]
    # candidates alternate: the refund question (kept, then a duplicate of itself), the CPU one (answered)
    assert result.rejected == {"duplicate": 2, "answered_by_kb": 3}
    refund = next(c for c in result.checks if "refund" in c["question"])
    expected = [p.document_id for p in retriever.lookup(refund["question"]).projection.items]
    assert refund["evidence"] == expected and refund["verdict"] == "not answered" and refund["kept"]
    cpu = next(c for c in result.checks if "CPU" in c["question"])
    assert cpu["verdict"] == "answered" and cpu["quote_found"] is True and not cpu["kept"]
    assert "Asked for 2 items that should not be answerable, made 1" in result.warnings[0]
    check = next(b for b in server.chat_requests() if b["messages"][0]["content"] == prompts.CHECK["en"])
    assert "[" + expected[0] + "]" in check["messages"][1]["content"]


FOLLOW = {  # doc_id -> (first question, follow-up, the follow-up's answer)
    "cpu.md": ("What does the HighCPUUsageCritical alert do?", "How long must it stay that way first?",
               "for 5 minutes"),
    "disk.md": ("What must never be deleted when a node's disk is full?", "What should I run instead?",
                "clear old container images with crictl rmi --prune instead"),
    "orders.md": ("What happens to an order left in PENDING_PAYMENT?", "After how long?", "30 minutes"),
    "keys.md": ("How does the order service handle an Idempotency-Key?", "How long is it kept?", "for 24 hours"),
    "oncall_zh.md": ("P1 故障的告警由谁确认？", "那要在多久之内完成呢？", "5 分钟内由主值班工程师确认"),
    "release_zh.md": ("上线之前要在发布系统里建什么单？", "它要写明哪些内容？",
                      "写明版本号、变更内容、影响范围和回滚方案"),
}


def follow_responder(overrides: dict[str, Callable[[Any], Any]] | None = None) -> Callable[[Any], Any]:
    """Answers a follow-up request with the document's (first question, follow-up, answer), a question request as
    `responder` does."""
    def reply(request: Any) -> Any:
        if kind_of(request) != "follow_up":
            return responder()(request)
        doc = doc_of(request)
        if overrides and doc in overrides:
            return overrides[doc](request)
        first, follow_up, answer = FOLLOW[doc]
        return say({"question": first, "follow_up": follow_up, "answer": answer})
    return reply


def test_follow_up_items_keep_the_first_question_as_their_history(kb, server, tmp_path: Path) -> None:
    script(server, follow_responder())
    result = generate(kb, server, FakeTime(), size=6, follow_ups=0.5)
    assert result.rejected == {} and len(result.items) == 6
    assert [i.kind for i in result.items] == ["question", "follow_up"] * 3  # spread over the set
    for item in result.items[1::2]:
        doc_id = item.relevant[0]
        first, follow_up, answer = FOLLOW[doc_id]
        assert (item.query, item.answer, item.source) == (follow_up, answer, f"{doc_id}#chunk-0")
        assert [(t.role, t.content) for t in item.history] == [("user", first)] and item.generator == "model"
    asked = [b for b in server.chat_requests() if b["messages"][0]["content"] in prompts.FOLLOW_UP.values()]
    assert len(asked) == 3 and all(b["temperature"] == 0.0 for b in asked)
    assert result.meta()["follow_ups"] == 3 and result.meta()["prompt_version"] == PROMPT_VERSION
    back = read_test_set(result.write(tmp_path / "conv.jsonl"))
    assert back.items == result.items


@pytest.mark.parametrize(("reply", "rejected"), [
    ({"question": "What must never be deleted when a node's disk is full?",  # repeats the topic: stands alone
      "follow_up": "Which folders must stay on a full disk?", "answer": "/var/lib/mysql"}, "stands_alone"),
    ({"question": "What must never be deleted when a node's disk is full?",  # a topic of its own, no reference
      "follow_up": "What is the refund window for euro payments?", "answer": "/var/lib/mysql"}, "stands_alone"),
    ({"question": "What must never be deleted when a node's disk is full?",  # no follow-up: asked again, then counted
      "answer": "/var/lib/mysql"}, "malformed"),
    ({"question": "磁盘满时哪些目录不能删？", "follow_up": "What should I run instead?",  # a first question in Chinese
      "answer": "/var/lib/mysql"}, "wrong_language"),
])
def test_a_follow_up_that_stands_alone_or_is_malformed_is_rejected_by_its_reason(kb, server, reply,
                                                                                   rejected) -> None:
    script(server, follow_responder({"disk.md": lambda r: say(reply)}))
    result = generate(kb, server, FakeTime(), size=6, follow_ups=1.0)
    assert result.rejected == {rejected: 1} and len(result.items) == 5
    assert {i.kind for i in result.items} == {"follow_up"} and "disk.md" not in {i.relevant[0] for i in result.items}
    if rejected == "malformed":
        assert result.failures[0]["detail"] == '"follow_up" is missing or not a non-empty string'
        assert len(result.failures[0]["replies"]) == 3  # asked again twice


def test_a_follow_up_share_that_leaves_no_room_is_one_line(kb, server) -> None:
    store, retriever = kb
    with pytest.raises(EvaluationError, match=r"--follow-up-share 1 asks for 4 follow-ups, but only 2 of the 4"):
        generate_with_model(store, chat_model(server, FakeTime()), size=4, unanswerable=0.5, follow_ups=1.0,
                            lookup=retriever.lookup)
    assert server.chat_requests() == []

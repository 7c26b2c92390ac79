"""Scoring the agent's answers on a test set, on the sample knowledge base (Milvus Lite, the real local
embedder): the offline agent's figures pinned (deterministic), refusals, citations the model invented (the
agent with the real `ChatModel` against the loopback OpenAI server), the judge through the same server
including a garbage verdict, a turn that fails, and the run saved like retrieval runs."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from rag_core.agent import Agent, Toolbox, knowledge_base_tool
from rag_core.bootstrap import build_agent
from rag_core.clients.openai_chat import ChatModelConfig
from rag_core.clients.openai_chat import OpenAIChatModel as ChatModel
from rag_core.errors import EvaluationError
from rag_core.evaluation.answers import (
    JUDGE,
    NO_JUDGE,
    answers_dir,
    load_answer_run,
    refuses,
    save_answer_run,
    score_answers,
)
from rag_core.evaluation.generate import generate_offline
from rag_core.evaluation.testsets import TestItem, TestSet, review_item
from tests.servers.chat import Completion, OpenAIChatServer, tool_call

KEY = "sk-judge-SECRET-7c1d09b2"


@pytest.fixture(scope="module")
def biz(sample_kbs):
    return sample_kbs["biz"]


@pytest.fixture(scope="module")
def offline_set(biz) -> TestSet:
    result = generate_offline(biz.store, size=12, seed=0, kb_name="biz")
    return TestSet("biz-offline", result.items, result.meta())


@pytest.fixture
def server():
    yield from OpenAIChatServer(api_key=KEY).serve()


def model_of(server: OpenAIChatServer, **config: Any) -> ChatModel:
    cfg = ChatModelConfig(provider="openai", base_url=server.base_url, model=server.models[0],
                          api_key_env="TEST_CHAT_KEY", **{"timeout": 30.0, "max_retries": 0, **config})
    return ChatModel(cfg, KEY, sleep=lambda s: None, jitter=lambda: 0.0)


def test_the_offline_agent_answers_every_item_and_its_figures_are_pinned(biz, offline_set, offline_figures,
                                                                         tmp_path: Path) -> None:
    agent = build_agent(biz, env={})  # the chat page's agent: no key, so offline (extractive)
    assert agent.mode == "offline"
    seen = []
    run = score_answers(agent, offline_set, progress=seen.append)
    again = score_answers(agent, offline_set)
    assert [{k: v for k, v in r.items() if k != "seconds"} for r in run.items] == \
        [{k: v for k, v in r.items() if k != "seconds"} for r in again.items]  # deterministic
    s = run.summary
    assert (s["items"], s["answerable"], s["unanswerable"], s["errors"]) == (12, 12, 0, 0)
    assert {k: s[k] for k in ("answer_found", "f1", "cites", "citations_valid", "citation_support",
                              "false_refusals")} == offline_figures
    assert s["refusals"] is None  # no item should not be answerable
    assert s["faithfulness"] is None and s["faithfulness_note"] == NO_JUDGE and s["judged"] == 0
    assert run.config["faithfulness"] == NO_JUDGE and run.config["judge"] is None
    assert any("generated offline" in w for w in run.warnings)
    assert [(p.stage, p.done, p.total) for p in seen][-1] == ("answering", 12, 12)
    first = run.items[0]
    assert first["citations"] and set(first["citations"]) <= set(first["evidence_keys"])
    assert first["unverified_citations"] == [] and first["answer"].startswith("**Offline mode**")

    paths = save_answer_run(run, tmp_path / "run")
    saved = load_answer_run(tmp_path / "run")
    assert saved["kind"] == "answers" and saved["summary"] == run.summary and len(saved["items"]) == 12
    with paths["queries"].open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["id"] for r in rows] == [i.id for i in offline_set.items] and "judge" not in rows[0]
    with paths["summary"].open(encoding="utf-8") as fh:
        assert next(csv.DictReader(fh))["answer_found"] == str(offline_figures["answer_found"])
    with pytest.raises(EvaluationError, match="is not a saved answer run"):
        (tmp_path / "retrieval").mkdir()
        (tmp_path / "retrieval" / "run.json").write_text(json.dumps({"points": []}), encoding="utf-8")
        load_answer_run(tmp_path / "retrieval")
    assert answers_dir(biz.settings) == biz.settings.data_dir / "eval" / "answers"


def test_items_that_should_not_be_answerable_are_scored_as_refusals(biz, offline_set) -> None:
    items = review_item(offline_set.items[:4], "g002", should_answer=False)
    items = review_item(items, "g003", state="dropped")
    items += (TestItem("u1", "今天食堂的午饭菜单是什么？", (), should_answer=False),)
    agent = build_agent(biz, env={})
    run = score_answers(agent, TestSet("marked", items))
    assert [r["id"] for r in run.items] == ["g001", "g002", "g004", "u1"]  # g003 dropped: never asked
    marked = run.items[1]
    assert marked["should_answer"] is False and marked["answer_found"] is None and marked["f1"] is None
    assert marked["citation_support"] is None and marked["refused"] is False
    assert (run.summary["answerable"], run.summary["unanswerable"]) == (2, 2)
    assert run.summary["refusals"] == 0.0  # offline mode quotes the closest evidence, it never declines
    sampled = score_answers(agent, offline_set, sample=3, seed=1)
    assert sampled.set_info["queries"] == {"rule": "sample", "sample": 3, "seed": 1, "chosen": 3, "of": 12}
    assert [r["id"] for r in sampled.items] == [r["id"] for r in score_answers(agent, offline_set, sample=3,
                                                                                seed=1).items]


def test_refusals_are_told_from_quotes(biz) -> None:
    assert refuses("The knowledge base does not cover the refund window for euro payments.")
    assert refuses("知识库中没有关于食堂菜单的信息。")
    assert not refuses("- “实在找不到合适的位置才会硬切。” [product/vector_search_zh.md#chunk-5]")
    assert not refuses("Clean the journal first [runbooks/disk_full.md#chunk-2].")


def key_holding(request: Any, text: str) -> str:
    """The evidence key of the first result the model received that holds `text`."""
    tool = [m for m in request.json["messages"] if m["role"] == "tool"][-1]
    return next(r["document_id"] for r in json.loads(tool["content"])["results"] if text in r["content"])


def test_a_model_agents_invented_citation_is_not_valid_and_a_failed_turn_is_an_empty_answer(biz, server) -> None:
    item = TestItem("q1", "When does HighCPUUsageCritical fire?", ("runbooks/cpu_high.md",),
                    ("95% for 5 minutes",))
    server.reply(Completion.calls(tool_call("search_knowledge_base", {"query": "HighCPUUsageCritical"})),
                 lambda req: Completion.say(f"It fires above 95% for 5 minutes [{key_holding(req, '95% for 5')}]; "
                                            "it pages [made/up.md#chunk-9]."),
                 server.server_error(500))
    agent = Agent(Toolbox([knowledge_base_tool(biz.retriever)]), model_of(server))
    run = score_answers(agent, [item, TestItem("q2", "Who is on call?", ("policies/oncall_zh.md",), ("值班",))])
    one, two = run.items
    assert one["answer_found"] is True and one["unverified_citations"] == ["made/up.md#chunk-9"]
    assert one["citations_valid"] is False and one["cites"] is True
    assert one["citation_support"] is True and one["citations"][0].startswith("runbooks/cpu_high.md#chunk-")
    assert two["error"] and two["answer_found"] is False and two["f1"] == 0.0 and two["cites"] is False
    assert run.summary["errors"] == 1 and run.summary["citations_valid"] == 0.0
    assert run.warnings[0].startswith("1 of 2 turns ended in an error (scored as empty answers); first: The chat "
                                      "model at")


def test_the_judge_scores_sentences_against_the_cited_evidence_and_a_garbage_verdict_is_recorded(
        biz, offline_set, server) -> None:
    asked: list[Any] = []

    def verdicts(request: Any) -> Completion:
        asked.append(request)
        numbered = request.json["messages"][1]["content"].split("Answer sentences:\n", 1)[1].splitlines()
        if len(asked) <= 2:  # the first item's judge, and the one retry: not the verdicts asked for
            return Completion.say("I think most of it is fine!")
        kinds = ["no_claim"] + ["supported", "unsupported", "supported"] * len(numbered)
        return Completion.say(json.dumps({"verdicts": [{"sentence": n, "verdict": kinds[n - 1]}
                                                       for n in range(1, len(numbered) + 1)]}))

    server.reply(*([verdicts] * 40))
    items = offline_set.items[:3]
    run = score_answers(build_agent(biz, env={}), TestSet("judged", items), judge=model_of(server), judge_retries=1)
    garbage, *judged = run.items
    assert garbage["faithfulness"] is None and garbage["judge"]["error"].startswith("malformed: the reply is not JSON")
    assert garbage["judge"]["raw"] == ["I think most of it is fine!"] * 2  # asked again once, both kept
    for record in judged:
        n = len(record["judge"]["sentences"])
        kinds = (["no_claim"] + ["supported", "unsupported", "supported"] * n)[:n]
        assert record["judge"]["verdicts"] == kinds
        assert record["faithfulness"] == pytest.approx(round(kinds.count("supported") / (n - 1), 6))
        assert json.loads(record["judge"]["raw"][0])["verdicts"][0] == {"sentence": 1, "verdict": "no_claim"}
    assert run.summary["judged"] == 2 and run.summary["judge_failures"] == 1
    assert run.summary["faithfulness"] == pytest.approx(sum(r["faithfulness"] for r in judged) / 2, abs=1e-6)
    assert run.config["judge"]["prompt"] == JUDGE and run.config["judge"]["model"].startswith("test-chat via")
    assert any("no usable verdicts on 1 items" in w for w in run.warnings)
    request = server.chat_requests()[2]  # the second item's (the first one's were asked twice)
    assert request["temperature"] == 0.0 and request["messages"][0]["content"] == JUDGE["zh"]  # a Chinese answer
    cited = judged[0]["citations"]
    assert all(f"[{key}]" in request["messages"][1]["content"] for key in cited)


def test_an_empty_set_is_an_error(biz, offline_set) -> None:
    dropped = tuple(review_item(offline_set.items[:1], offline_set.items[0].id, state="dropped"))
    with pytest.raises(EvaluationError, match="has no items to ask"):
        score_answers(build_agent(biz, env={}), TestSet("none", dropped))


def test_a_follow_up_is_asked_after_its_earlier_turns(biz, server) -> None:
    """A generated follow-up (its first question only): the agent answers the first question, unscored, then the
    follow-up in the same session; a hand-written one with the earlier answer: that answer is the session's."""
    from rag_core.records import ConversationTurn

    first = "What does the HighCPUUsageCritical alert do?"
    generated = TestItem("f1", "How long must it stay high?", ("runbooks/cpu_high.md",), ("95% for 5 minutes",),
                         kind="follow_up", history=(ConversationTurn("user", first),))
    written = TestItem("f2", "And who gets paged?", ("runbooks/cpu_high.md",), ("primary",), kind="follow_up",
                       history=(ConversationTurn("user", first), ConversationTurn("assistant", "It pages someone.")))
    server.reply(Completion.say("It pages the on-call engineer."), Completion.say("Above 95% for 5 minutes."),
                 Completion.say("The primary on-call engineer."))
    run = score_answers(Agent(Toolbox([knowledge_base_tool(biz.retriever)]), model_of(server)), [generated, written])
    assert [(r["id"], r["answer_found"]) for r in run.items] == [("f1", True), ("f2", True)]
    asked = [[(m["role"], m["content"]) for m in body["messages"][1:]] for body in server.chat_requests()]
    assert asked == [[("user", first)],
                     [("user", first), ("assistant", "It pages the on-call engineer."),
                      ("user", "How long must it stay high?")],
                     [("user", first), ("assistant", "It pages someone."), ("user", "And who gets paged?")]]

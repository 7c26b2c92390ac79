"""Conversational test sets (issue 35): a line labels the last question of a conversation, given as `turns` or as
`query` with `history`; a run looks it up with its history, so the rewrite stage runs as in chat; the bundled set
`sample-conversations` over examples/kb."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from rag_core.bootstrap import factories
from rag_core.cli import main as eval_main
from rag_core.config import load_settings
from rag_core.errors import EvaluationError
from rag_core.evaluation import Grid, load_set, load_user_set, run_evaluation
from rag_core.evaluation.datasets import (
    SAMPLE_CONVERSATIONS,
    SAMPLE_CONVERSATIONS_NAME,
    answers_located,
    bundled_sets,
    parse_user_set,
)
from rag_core.evaluation.report import failed_queries
from rag_core.languages import CJK, language_of
from rag_core.records import ConversationTurn
from tests.helpers import SAMPLE_KB

FIRST = "What is the Idempotency-Key header of the order API for?"
ANSWER = ("A second request with the same key and body returns the original response "
          "[product/order_service.md#chunk-10].")
LAST = "How long is it stored?"
LABELS = {"relevant": ["product/order_service.md"], "answer": "The service stores each key for 24 hours"}


def line(**row) -> str:
    return json.dumps(row, ensure_ascii=False) + "\n"


# ------------------------------------------------------------------------------------------ the format
def test_turns_and_query_with_history_are_the_same_question() -> None:
    turns = [{"role": "user", "content": FIRST}, {"role": "assistant", "content": ANSWER},
             {"role": "user", "content": LAST}]
    text = (line(id="t", turns=turns, **LABELS) + line(id="h", query=LAST, history=turns[:2], **LABELS)
            + line(id="u", turns=[turns[0], turns[2]], **LABELS) + line(id="p", query=FIRST, **LABELS))
    t, h, u, p = parse_user_set(text, "conv.jsonl")
    assert t.text == h.text == LAST and t.history == h.history == (ConversationTurn("user", FIRST),
                                                                   ConversationTurn("assistant", ANSWER))
    assert (t.relevant, t.answers) == (h.relevant, h.answers)
    assert u.history == (ConversationTurn("user", FIRST),)  # assistant turns are optional
    assert p.history == ()  # a plain line is a question without a conversation


@pytest.mark.parametrize(("row", "message"), [
    ({"turns": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]},
     r"conv.jsonl, line 1: the last of `turns` must be the user's question"),
    ({"turns": []}, r"line 1: the last of `turns` must be the user's question"),
    ({"turns": [{"role": "system", "content": "a"}, {"role": "user", "content": "b"}]},
     r"line 1: `turns`, turn 1: role must be user or assistant \(got \"system\"\)"),
    ({"turns": [{"role": "user", "content": "a"}, {"role": "user", "content": " "}]},
     r"line 1: `turns`, turn 2: `content` is missing or empty"),
    ({"turns": [{"role": "user", "content": "a", "name": "x"}]}, r"turn 1: unknown field\(s\) name"),
    ({"turns": "user: a"}, r"line 1: `turns` must be a list of"),
    ({"turns": ["user: a"]}, r"`turns`, turn 1: expected an object with role and content"),
    ({"query": "b", "history": [{"content": "a"}]}, r"`history`, turn 1: role must be user or assistant \(got null\)"),
    ({"query": "b", "turns": [{"role": "user", "content": "a"}]}, r"give either `turns`.*or `query`"),
    ({"history": [{"role": "user", "content": "a"}]}, r"line 1: `query` is missing or empty"),
])
def test_a_malformed_conversation_names_the_line_the_field_and_the_turn(row: dict, message: str) -> None:
    with pytest.raises(EvaluationError, match=message):
        parse_user_set(line(**row, relevant=["d.md"]), "conv.jsonl")


def test_a_csv_cannot_hold_a_conversation() -> None:
    with pytest.raises(EvaluationError, match=r"s.csv, line 2: a CSV set cannot hold conversations; write a .jsonl"):
        parse_user_set("query,relevant,history\nb,d.md,user: a\n", "s.csv")


# ------------------------------------------------------------------------------------------ the bundled set
def test_the_bundled_conversations_load_by_name_over_the_sample_kb() -> None:
    assert bundled_sets()[SAMPLE_CONVERSATIONS_NAME] == SAMPLE_CONVERSATIONS
    conversations = load_set(SAMPLE_CONVERSATIONS_NAME)
    assert conversations.name == SAMPLE_CONVERSATIONS_NAME and len(conversations.documents) == 10
    assert len(conversations.queries) >= 40 and all(q.history for q in conversations.queries)
    assert answers_located(conversations) == []  # every answer is a quote of a relevant document
    texts = {d.doc_id: d.text for d in conversations.documents}
    for q in conversations.queries:
        assert any(a.text in texts[d] for a in q.answers for d in q.relevant), q.query_id
        asked = [t for t in q.history if t.role == "user"]
        assert 1 <= len(asked) <= 2, q.query_id  # two- and three-turn conversations


def test_the_bundled_conversations_cover_each_kind_in_both_languages() -> None:
    rows = [json.loads(text) for text in SAMPLE_CONVERSATIONS.read_text(encoding="utf-8").splitlines()]
    kinds = Counter(row["kind"] for row in rows)
    assert set(kinds) == {"pronoun", "ellipsis", "switch"} and min(kinds.values()) >= 10
    zh = [row for row in rows if language_of(row["turns"][-1]["content"]) == CJK]
    assert 0.35 <= len(zh) / len(rows) <= 0.65  # roughly half each
    crossing = [row for row in rows if {language_of(t["content"]) == CJK for t in row["turns"] if t["role"] == "user"}
                == {True, False} or (language_of(row["turns"][-1]["content"]) == CJK)
                != (row["relevant"][0].endswith("_zh.md"))]
    assert len(crossing) >= 5
    with_answers = [row for row in rows if any(t["role"] == "assistant" for t in row["turns"])]
    assert 0 < len(with_answers) < len(rows)  # some with the assistant's answers, some user-only


# ------------------------------------------------------------------------------------------ a run
@pytest.fixture(scope="module")
def settings(eval_data_dir):
    return load_settings(data_dir=eval_data_dir, env={}, config_file=None)


def test_a_run_looks_the_question_up_with_its_history(settings, local_embedder, tmp_path) -> None:
    # "How long is it stored?" alone finds nothing about idempotency keys; rewritten with the earlier question it does
    path = tmp_path / "conv.jsonl"
    path.write_text(line(id="c", turns=[{"role": "user", "content": FIRST}, {"role": "user", "content": LAST}],
                         **LABELS), encoding="utf-8")
    eval_set = load_user_set(path, corpus=SAMPLE_KB)
    rows = {}
    for mode in ("off", "offline"):
        chosen = settings.with_overrides({"rag.rewrite": mode}, "test")
        run = run_evaluation(eval_set, Grid.from_settings(chosen), chosen, factories=factories(),
                             embedder=local_embedder)
        rows[mode] = run.points[0].queries[0]
        assert run.config["rewrite"] == {"mode": mode, "model": None}
    assert (rows["off"]["rewrite"], rows["off"]["searched"], rows["off"]["answer_found"]) == ("off", LAST, False)
    assert rows["offline"]["rewrite"] == "rewritten" and rows["offline"]["answer_found"] is True
    assert rows["offline"]["searched"].startswith(LAST + " (") and "Idempotency-Key" in rows["offline"]["searched"]
    assert rows["offline"]["query"] == LAST  # the question as asked, the searched one beside it


def test_a_question_without_history_records_no_rewrite(settings, local_embedder) -> None:
    run = run_evaluation(load_set("sample", limit=1), Grid.from_settings(settings), settings, factories=factories(),
                         embedder=local_embedder)
    assert "searched" not in run.points[0].queries[0] and "rewrite" not in run.config


def test_eval_runs_the_bundled_conversations_by_name(settings, capsys) -> None:
    code = eval_main(["--data-dir", str(settings.data_dir), "eval", SAMPLE_CONVERSATIONS_NAME, "--limit", "3",
                      "--quiet", "--no-save", "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    queries = json.loads(out)["points"][0]["queries"]
    assert [q["query_id"] for q in queries] == ["c01", "c02", "c03"]
    assert all(q["rewrite"] in ("rewritten", "kept") and q["searched"] for q in queries)


def test_failed_queries_show_the_searched_question_where_the_rewrite_changed_it() -> None:
    point = {"queries": [
        {"query": "And the inodes?", "searched": "And the inodes? (disk full)", "relevant": ["d.md"],
         "first_relevant_rank": None, "answer_found": False, "raw_answer_found": False, "failed": True,
         "evidence_keys": []},
        {"query": "When does the reconciliation run?", "searched": "When does the reconciliation run?",
         "relevant": ["p.md"], "first_relevant_rank": None, "answer_found": False, "raw_answer_found": False,
         "failed": True, "evidence_keys": []}]}
    rows = failed_queries(point)
    assert [r["searched"] for r in rows] == ["And the inodes? (disk full)", ""]
    assert list(rows[0])[:3] == ["query", "searched", "relevant"]
    plain = [{k: v for k, v in q.items() if k != "searched"} for q in point["queries"]]
    assert "searched" not in failed_queries({"queries": plain})[0]


def test_the_evaluation_page_runs_an_uploaded_conversation(eval_data_dir, monkeypatch) -> None:
    from tests.ui.apptest_helpers import app_at
    from ui.state import clear_workbench

    monkeypatch.setenv("RAG_DATA_DIR", str(eval_data_dir))
    monkeypatch.delenv("RAG_CONFIG", raising=False)
    at = app_at("pages/evaluation.py")
    at.default_timeout = 90
    try:
        at.radio(key="eval_source").set_value("Upload a set").run()
        at.file_uploader(key="eval_upload").set_value((
            "talk.jsonl",
            line(id="c", turns=[{"role": "user", "content": FIRST}, {"role": "user", "content": LAST}],
                 relevant=LABELS["relevant"], answer="words no document holds").encode("utf-8"),
            "application/json")).run()
        assert not at.exception
        at.button(key="eval_run").click().run()
        assert not at.exception, at.exception
        saved = at.session_state["eval_last_run"]["run"]
        assert saved["set"] == "talk" and saved["points"][0]["queries"][0]["rewrite"] == "rewritten"
        failed = next(d.value for d in at.dataframe if "debugger" in d.value.columns)
        assert list(failed["query"]) == [LAST] and "Idempotency-Key" in failed["searched"][0]
        assert "Idempotency-Key" in failed["debugger"][0]  # the debugger searches what the run searched
    finally:
        clear_workbench()


def test_eval_with_a_chat_model_rewrites_with_it(settings, capsys, tmp_path, monkeypatch) -> None:
    from tests.servers.chat import Completion, OpenAIChatServer

    path = tmp_path / "conv.jsonl"
    path.write_text(line(id="c", turns=[{"role": "user", "content": FIRST}, {"role": "user", "content": LAST}],
                         **LABELS), encoding="utf-8")
    standalone = "How long does the order service store an Idempotency-Key?"
    monkeypatch.setenv("TEST_CHAT_KEY", "sk-eval-rewrite")
    for server in OpenAIChatServer(api_key="sk-eval-rewrite").serve():
        server.reply(Completion.say(standalone))
        chat = {"chat.provider": "openai", "chat.base-url": server.base_url, "chat.model": "test-chat",
                "chat.api-key-env": "TEST_CHAT_KEY", "rag.rewrite-deadline": 60}
        sets = [arg for key, value in chat.items() for arg in ("--set", f"{key}={value}")]
        code = eval_main(["--data-dir", str(settings.data_dir), *sets, "eval", str(path), "--corpus", str(SAMPLE_KB),
                          "--quiet", "--no-save", "--json"])
        out = capsys.readouterr().out
        assert code == 0, out
        run = json.loads(out)
        assert run["config"]["rewrite"] == {"mode": "auto", "model": "test-chat"}
        (query,) = run["points"][0]["queries"]
        assert (query["rewrite"], query["searched"], query["answer_found"]) == ("rewritten", standalone, True), (
            query.get("rewrite_detail"))
        assert len(server.chat_requests()) == 1


def test_answer_scoring_reads_the_bundled_conversations_as_test_items() -> None:
    from rag_core.evaluation.testsets import read_test_set

    items = read_test_set(SAMPLE_CONVERSATIONS).items
    assert len(items) >= 40 and all(i.history and i.history[-1].role in ("user", "assistant") for i in items)
    assert {i.kind for i in items} == {"pronoun", "ellipsis", "switch"}

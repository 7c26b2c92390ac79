"""`chat` command: streamed answer on stdout, tool calls on stderr, exit 2 with one line on failure; a turn is one
trace, recorded, and `feedback rate` rates it by the trace id stderr gives."""

from __future__ import annotations

import argparse
import json

import pytest

from rag_core.cli.chat import cmd_chat, register
from tests.servers.chat import Completion, OpenAIChatServer, tool_call

from .conftest import KEY


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m rag_core")
    register(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(["chat", *argv])


def model_settings(kb, server) -> object:
    return kb.settings.with_overrides({"chat.provider": "openai", "chat.base-url": server.base_url,
                                       "chat.model": "test-chat", "chat.api-key-env": "RAG_TEST_CHAT_KEY"})


def test_offline_chat(kb, capsys) -> None:
    args = parse("--offline", "How", "do", "I", "free", "disk", "space?")
    assert args.func is cmd_chat
    assert cmd_chat(args, kb.settings, workbench=kb) == 0
    out, err = capsys.readouterr()
    assert out.startswith("**Offline mode**") and "[runbooks/disk_full.md#chunk-" in out
    assert "[offline mode: extractive answers" in err
    assert "→ search_knowledge_base(query='How do I free disk space?')" in err
    assert "← search_knowledge_base: 5 result(s): " in err and "cited: " in err


def test_model_chat_streams_and_shows_tool_calls(kb, capsys, monkeypatch, chat_server) -> None:
    monkeypatch.setenv("RAG_TEST_CHAT_KEY", KEY)
    chat_server.reply(Completion.calls(tool_call("search_knowledge_base", {"query": "P1 incident"})),
                      Completion.say("Declare it and page the on-call [made/up.md#chunk-1]."))
    assert cmd_chat(parse("What is a P1?"), model_settings(kb, chat_server), workbench=kb) == 0
    out, err = capsys.readouterr()
    assert out == "Declare it and page the on-call [made/up.md#chunk-1].\n"
    assert "[test-chat via OpenAI-compatible (http://127.0.0.1:" in err
    assert "→ search_knowledge_base(query='P1 incident')" in err
    assert "warning: cited but not returned by any tool this turn: made/up.md#chunk-1" in err
    assert KEY not in out + err


def test_a_turn_is_one_trace_and_feedback_rate_rates_it_by_the_id_stderr_gives(kb, capsys, monkeypatch,
                                                                              chat_server) -> None:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from rag_core import tracing
    from rag_core.bootstrap import build_turn_store
    from rag_core.cli import main
    from rag_core.cli.audit import who

    monkeypatch.setenv("RAG_TEST_CHAT_KEY", KEY)
    chat_server.reply(Completion.calls(tool_call("search_knowledge_base", {"query": "disk full"})),
                      Completion.say("Delete old logs."))
    spans = InMemorySpanExporter()
    tracing.install(tracing.TracingConfig(), spans, simple=True)
    try:
        assert cmd_chat(parse("My disk is full (traced)"), model_settings(kb, chat_server), workbench=kb) == 0
    finally:
        tracing.install(tracing.TracingConfig(), pinned=False)
    finished = spans.get_finished_spans()
    (trace_id,) = {format(s.context.trace_id, "032x") for s in finished}
    names = [s.name for s in finished]
    assert [s.name for s in finished if s.parent is None] == ["agent.turn"]
    assert names.count("chat.completions") == 2 and {"search_knowledge_base", "retrieve", "embed"} <= set(names)
    err = capsys.readouterr().err
    assert f"trace: {trace_id} (rate it: python -m rag_core feedback rate {trace_id} up|down)" in err
    assert main(["--data-dir", str(kb.settings.data_dir), "feedback", "rate", trace_id, "down"]) == 0
    turn = build_turn_store(kb.settings).get(trace_id=trace_id)
    assert (turn.question, turn.rating, turn.model) == ("My disk is full (traced)", -1, "test-chat")
    assert turn.user_name == who() and who().startswith("cli:")  # as the audit log names this command's person
    assert turn.lookups[0].query == "disk full" and turn.evidence_keys


def test_json_lines(kb, capsys, monkeypatch, chat_server) -> None:
    monkeypatch.setenv("RAG_TEST_CHAT_KEY", KEY)
    chat_server.reply(Completion.say("Hi there", parts=2))
    assert cmd_chat(parse("--json", "hi"), model_settings(kb, chat_server), workbench=kb) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [e["type"] for e in lines] == ["content", "content", "done"] and lines[-1]["text"] == "Hi there"


def test_a_dead_model_exits_2_with_one_line(kb, capsys, monkeypatch) -> None:
    monkeypatch.setenv("RAG_TEST_CHAT_KEY", KEY)
    with OpenAIChatServer() as gone:
        settings = model_settings(kb, gone)
    assert cmd_chat(parse("hello"), settings, workbench=kb) == 2
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = [x for x in err.splitlines() if x.startswith("error:")]
    assert "did not answer (connection refused). Check chat.base-url" in line and "Traceback" not in err


def test_interactive_session_keeps_history(kb, capsys, monkeypatch, chat_server) -> None:
    import io

    monkeypatch.setenv("RAG_TEST_CHAT_KEY", KEY)
    monkeypatch.setattr("sys.stdin", io.StringIO("first question\n\nsecond question\nexit\nnever asked\n"))
    chat_server.reply(Completion.say("one"), Completion.say("two"))
    assert cmd_chat(parse(), model_settings(kb, chat_server), workbench=kb) == 0
    assert capsys.readouterr().out == "one\ntwo\n"
    last = chat_server.chat_requests()[-1]["messages"]
    assert [(m["role"], m["content"]) for m in last[1:]] == [("user", "first question"), ("assistant", "one"),
                                                             ("user", "second question")]


@pytest.mark.milvus
def test_wired_into_the_main_cli_on_an_empty_knowledge_base(tmp_path, capsys, monkeypatch) -> None:
    from rag_core import cli

    for var in ("DASHSCOPE_API_KEY", "OPENAI_API_KEY", "RAG_CHAT_PROVIDER", "RAG_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    assert cli.main(["--data-dir", str(tmp_path), "chat", "磁盘满了怎么办？"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines()[-1] == ("error: The knowledge base search failed: The knowledge base is empty: ingest "
                                    "documents first (Knowledge base page, or `python -m rag_core ingest PATH`).")

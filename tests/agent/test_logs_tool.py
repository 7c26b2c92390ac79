"""The `query_logs` tool (the seed's fourth) over the Loki client and the fake one, and how bootstrap wires
the client into the agent (tests/clients/test_loki.py tests the client itself)."""

from __future__ import annotations

import json
from datetime import UTC, timedelta
from zoneinfo import ZoneInfo

import pytest

from rag_core.agent import Toolbox, ToolResultEvent, logs_tool
from rag_core.bootstrap import build_agent, build_logs_client
from rag_core.clients.loki import LokiClient
from rag_core.records import LogQuery
from tests.contracts.logs import NOW, STREAMS, ns
from tests.fakes.logs import FakeLogsClient
from tests.servers.chat import Completion, tool_call
from tests.servers.loki import LokiServer

from .conftest import KEY, with_settings

TOKEN = "loki-SECRET-token-91ab"


@pytest.fixture
def loki():
    yield from LokiServer(STREAMS).serve()


# ------------------------------------------------------------------------------------------------ the tool
SHANGHAI = ZoneInfo("Asia/Shanghai")


def tool(client) -> Toolbox:
    return Toolbox([logs_tool(client, SHANGHAI, now=lambda: NOW)])


def test_query_logs_returns_lines_newest_first_in_the_chat_time_zone(loki) -> None:
    run = tool(LokiClient(loki.url, now=lambda: NOW)).run(
        "query_logs", {"selector": '{app="order-service", level="error"}', "minutes": 60})
    assert run.output.ok and run.output.data == {
        "query": '{app="order-service", level="error"}',
        "from": "2026-05-10T17:30:00+08:00", "to": "2026-05-10T18:30:00+08:00", "count": 2, "truncated": False,
        "lines": [  # labels fixed by the selector are not repeated
            {"time": "2026-05-10T18:25:00+08:00", "labels": {"pod": "order-1"},
             "line": "java.lang.OutOfMemoryError: Java heap space"},
            {"time": "2026-05-10T17:40:00+08:00", "labels": {"pod": "order-1"}, "line": "timeout calling payment"}]}


def test_query_logs_range_filter_and_limit(loki) -> None:
    box = tool(LokiClient(loki.url, now=lambda: NOW))
    run = box.run("query_logs", {"selector": '{level="error"}', "contains": "refused", "minutes": 30,
                                 "end": "2026-05-10T18:25:00"})  # no offset: read in the chat time zone
    assert [x["line"] for x in run.output.data["lines"]] == ["connection refused to db:5432"]
    (query,) = loki.queries()[-1:]
    assert query["end"] == str(int((NOW - timedelta(minutes=5)).timestamp()) * 10**9)
    limited = box.run("query_logs", {"selector": '{app=~".+"}', "limit": 1})
    assert limited.output.data["count"] == 1 and limited.output.data["truncated"] is True


def test_query_logs_says_when_nothing_matched_and_clips_long_lines() -> None:
    long_line = "x" * 2000
    streams = [{"stream": {"app": "a"}, "values": [[ns(1), long_line]]}]
    box = tool(FakeLogsClient(streams, now=lambda: NOW))
    (line,) = box.run("query_logs", {"selector": '{app="a"}'}).output.data["lines"]
    assert len(line["line"]) == 501 and line["line"].endswith("…")
    empty = box.run("query_logs", {"selector": '{app="b"}'}).output.data
    assert empty["count"] == 0 and empty["message"].startswith("No log lines matched in this time range.")


@pytest.mark.parametrize("arguments, error", [
    ({"selector": "order-service"}, "must be a stream selector in braces"),
    ({"selector": '{app="a"}', "minutes": 0}, "minutes must be between 1 and 10080, got 0."),
    ({"selector": '{app="a"}', "limit": 500}, "limit must be between 1 and 200, got 500."),
    ({"selector": '{app="a"}', "end": "yesterday"}, "end 'yesterday' is not an ISO 8601 time"),
])
def test_query_logs_bad_arguments_go_back_to_the_model(arguments, error) -> None:
    run = tool(FakeLogsClient(STREAMS, now=lambda: NOW)).run("query_logs", arguments)
    assert not run.output.ok and error in run.output.error


def test_the_client_and_the_tool_exist_only_when_configured(kb, loki) -> None:
    assert build_logs_client(kb.settings, env={}) is None
    assert "query_logs" not in build_agent(kb, env={}).toolbox
    wb = with_settings(kb, {"logs.loki-url": loki.url, "logs.tenant": "team-a", "logs.timeout": 30})
    client = build_logs_client(wb.settings, env={"LOKI_TOKEN": TOKEN})
    assert client.where == loki.url and client.policy.timeout == 30 and TOKEN not in repr(client)
    client.query_range(LogQuery('{app="payment"}'))
    assert loki.requests[0].header("authorization") == f"Bearer {TOKEN}"
    assert loki.requests[0].header("x-scope-orgid") == "team-a"
    assert build_agent(wb, env={}).toolbox.names == ["search_knowledge_base", "get_current_datetime", "query_logs"]


def test_a_turn_that_reads_the_logs(kb, loki, chat_server) -> None:
    settings = {"logs.loki-url": loki.url, "chat.provider": "openai", "chat.base-url": chat_server.base_url,
                "chat.model": "test-chat", "chat.api-key-env": "MY_CHAT_KEY", "chat.timezone": "UTC"}
    agent = build_agent(with_settings(kb, settings), env={"MY_CHAT_KEY": KEY})
    end = NOW.astimezone(UTC).isoformat()
    chat_server.reply(Completion.calls(tool_call("query_logs", {"selector": '{app="payment"}', "end": end})),
                      Completion.say("The payment service cannot reach its database."))
    events = list(agent.run("Why are payments failing?"))
    (result,) = [e for e in events if isinstance(e, ToolResultEvent)]
    assert result.ok and [x["line"] for x in result.result["lines"]] == ["connection refused to db:5432"]
    assert json.loads(chat_server.chat_requests()[1]["messages"][-1]["content"]) == result.result
    assert events[-1].type == "done"

"""The alerts tool (the seed's QueryMetricsTools) over the Prometheus client, and how bootstrap wires the
client into the agent (tests/clients/test_prometheus.py tests the client itself)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from rag_core.agent import Toolbox, ToolResultEvent, prometheus_alerts_tool
from rag_core.bootstrap import build_agent, build_metrics_client
from rag_core.clients.prometheus import PrometheusClient
from tests.contracts.metrics import SERVER_ALERTS
from tests.servers.chat import Completion, tool_call
from tests.servers.prometheus import PrometheusServer

from .conftest import KEY, with_settings

NOW = datetime(2026, 5, 10, 10, 30, 0, tzinfo=UTC)


@pytest.fixture
def prometheus():
    yield from PrometheusServer(SERVER_ALERTS).serve()


# ------------------------------------------------------------------------------------------------ the tool
def test_first_alert_per_name_with_state_and_duration(prometheus) -> None:
    out = prometheus_alerts_tool(PrometheusClient(prometheus.url), now=lambda: NOW).fn()
    assert out.ok and out.data == {"count": 2, "alerts": [
        {"name": "HighCPUUsage", "description": "CPU above 85% on node-3", "state": "firing",
         "active_since": "2026-05-10T08:12:31.123456789Z", "duration": "2h 17m"},
        {"name": "DiskSpaceLow", "description": "Disk below 15% on /var", "state": "pending",
         "active_since": "2026-05-10T10:29:15Z", "duration": "45s"},
    ]}


def test_no_alerts_and_a_url_for_convenience() -> None:
    with PrometheusServer([]) as empty:
        out = prometheus_alerts_tool(empty.url, timeout=30).fn()
    assert out.ok and out.data == {"alerts": [], "count": 0, "message": "No alerts are active in Prometheus."}


def test_a_failure_reaches_the_model_as_an_error_object() -> None:
    with PrometheusServer() as gone:
        url = gone.url
    run = Toolbox([prometheus_alerts_tool(PrometheusClient(url, max_retries=0))]).run("query_prometheus_alerts", "{}")
    assert not run.output.ok and run.output.data == {"error": f"Prometheus at {url} did not answer (connection "
                                                               "refused). Check prometheus.url."}


def test_the_client_and_the_tool_exist_only_when_configured(kb, prometheus) -> None:
    assert build_metrics_client(kb.settings, env={}) is None
    assert "query_prometheus_alerts" not in build_agent(kb, env={}).toolbox
    wb = with_settings(kb, {"prometheus.url": prometheus.url, "prometheus.timeout": 3, "prometheus.max-retries": 0})
    client = build_metrics_client(wb.settings, env={})
    assert client.where == prometheus.url and (client.policy.timeout, client.policy.max_retries) == (3, 0)
    agent = build_agent(wb, env={})
    assert agent.toolbox.names == ["search_knowledge_base", "get_current_datetime", "query_prometheus_alerts"]


def test_a_turn_that_checks_the_alerts(kb, prometheus, chat_server) -> None:
    settings = {"prometheus.url": prometheus.url, "chat.provider": "openai", "chat.base-url": chat_server.base_url,
                "chat.model": "test-chat", "chat.api-key-env": "MY_CHAT_KEY"}
    agent = build_agent(with_settings(kb, settings), env={"MY_CHAT_KEY": KEY})
    chat_server.reply(Completion.calls(tool_call("query_prometheus_alerts", "{}")),
                      Completion.say("HighCPUUsage is firing."))
    events = list(agent.run("What is alerting right now?"))
    (result,) = [e for e in events if isinstance(e, ToolResultEvent)]
    assert result.ok and [a["name"] for a in result.result["alerts"]] == ["HighCPUUsage", "DiskSpaceLow"]
    tool_message = chat_server.chat_requests()[1]["messages"][-1]
    assert json.loads(tool_message["content"]) == result.result
    assert "query_prometheus_alerts" in [t["function"]["name"] for t in chat_server.chat_requests()[0]["tools"]]
    assert events[-1].text == "HighCPUUsage is firing."

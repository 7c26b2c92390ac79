"""The Prometheus alerts tool against a local server speaking the real `/api/v1/alerts` API."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from rag_core.agent import ToolResultEvent, prometheus_alerts_tool
from rag_core.bootstrap import build_agent
from tests.servers.chat import Completion, tool_call
from tests.servers.prometheus import PrometheusServer, alert

from .conftest import KEY, with_settings

NOW = datetime(2026, 5, 10, 10, 30, 0, tzinfo=timezone.utc)
ALERTS = [
    alert("HighCPUUsage", "CPU above 85% on node-3", active_at="2026-05-10T08:12:31.123456789Z",
          labels={"instance": "node-3"}),
    alert("HighCPUUsage", "CPU above 85% on node-7", active_at="2026-05-10T09:00:00Z", labels={"instance": "node-7"}),
    alert("DiskSpaceLow", summary="Disk below 15% on /var", state="pending", active_at="2026-05-10T10:29:15Z"),
    alert("ContainerOOMKilled", "order-service was OOM-killed", active_at="2026-05-07T09:30:00+08:00"),
]


@pytest.fixture
def prometheus():
    yield from PrometheusServer(ALERTS).serve()


def test_first_alert_per_name_with_state_and_duration(prometheus) -> None:
    tool = prometheus_alerts_tool(prometheus.url, timeout=2, now=lambda: NOW)
    out = tool.fn()
    assert out.ok and out.data == {"count": 3, "alerts": [
        {"name": "HighCPUUsage", "description": "CPU above 85% on node-3", "state": "firing",
         "active_since": "2026-05-10T08:12:31.123456789Z", "duration": "2h 17m"},
        {"name": "DiskSpaceLow", "description": "Disk below 15% on /var", "state": "pending",
         "active_since": "2026-05-10T10:29:15Z", "duration": "45s"},
        {"name": "ContainerOOMKilled", "description": "order-service was OOM-killed", "state": "firing",
         "active_since": "2026-05-07T09:30:00+08:00", "duration": "3d 9h"},
    ]}
    (request,) = prometheus.requests
    assert (request.method, request.path) == ("GET", "/api/v1/alerts")


def test_no_alerts(prometheus) -> None:
    prometheus.alerts = []
    out = prometheus_alerts_tool(prometheus.url + "/").fn()
    assert out.ok and out.data == {"alerts": [], "count": 0, "message": "No alerts are active in Prometheus."}


def test_failures_are_error_objects(prometheus) -> None:
    with PrometheusServer() as gone:
        url = gone.url
    out = prometheus_alerts_tool(url, timeout=1).fn()
    assert not out.ok and out.error == (f"Prometheus at {url} did not answer (connection refused); alerts are "
                                        "unavailable. Check prometheus.url.")
    wrong = prometheus_alerts_tool(prometheus.url + "/prometheus").fn()
    assert not wrong.ok and "answered HTTP 404" in wrong.error
    prometheus.always(PrometheusServer.error(422, "execution", "query timed out"))
    failing = prometheus_alerts_tool(prometheus.url).fn()
    assert failing.error == f"Prometheus at {prometheus.url} answered HTTP 422: query timed out. Check prometheus.url."


def test_the_tool_is_registered_only_when_configured(kb, prometheus) -> None:
    assert "query_prometheus_alerts" not in build_agent(kb, env={}).toolbox
    agent = build_agent(with_settings(kb, {"prometheus.url": prometheus.url}), env={})
    assert agent.toolbox.names == ["search_knowledge_base", "get_current_datetime", "query_prometheus_alerts"]


def test_a_turn_that_checks_the_alerts(kb, prometheus, chat_server) -> None:
    settings = {"prometheus.url": prometheus.url, "chat.provider": "openai", "chat.base-url": chat_server.base_url,
                "chat.model": "test-chat", "chat.api-key-env": "MY_CHAT_KEY"}
    agent = build_agent(with_settings(kb, settings), env={"MY_CHAT_KEY": KEY})
    chat_server.reply(Completion.calls(tool_call("query_prometheus_alerts", "{}")),
                      Completion.say("HighCPUUsage is firing."))
    events = list(agent.run("What is alerting right now?"))
    (result,) = [e for e in events if isinstance(e, ToolResultEvent)]
    assert result.ok and [a["name"] for a in result.result["alerts"]] == ["HighCPUUsage", "DiskSpaceLow",
                                                                          "ContainerOOMKilled"]
    tool_message = chat_server.chat_requests()[1]["messages"][-1]
    assert json.loads(tool_message["content"]) == result.result
    assert "query_prometheus_alerts" in [t["function"]["name"] for t in chat_server.chat_requests()[0]["tools"]]
    assert events[-1].text == "HighCPUUsage is firing."

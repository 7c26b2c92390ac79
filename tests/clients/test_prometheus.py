"""Prometheus: the metrics client (contract + failures through a server speaking `/api/v1/alerts`) and
the alerts tool."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from rag_core.agent import Alert, PrometheusClient, Toolbox, ToolResultEvent, prometheus_alerts_tool
from rag_core.bootstrap import build_agent, build_metrics_client
from rag_core.errors import MetricsError
from tests.contracts.metrics import ALERTS, MetricsClientContract
from tests.contracts.remote import RemoteFailuresContract
from tests.fakes.metrics import FakeMetricsClient
from tests.servers.chat import Completion, tool_call
from tests.servers.prometheus import PrometheusServer, alert

from .conftest import KEY, with_settings

NOW = datetime(2026, 5, 10, 10, 30, 0, tzinfo=timezone.utc)
SERVER_ALERTS = [alert(name, description, state=state, active_at=at, labels={"instance": f"node-{i}"})
                 for i, (name, description, state, at) in enumerate(ALERTS)]


@pytest.fixture
def prometheus():
    yield from PrometheusServer(SERVER_ALERTS).serve()


class TestPrometheusClient(MetricsClientContract, RemoteFailuresContract):
    error = MetricsError

    @pytest.fixture
    def server(self, prometheus):
        return prometheus

    @pytest.fixture
    def make(self, server):
        def make(url=None, **kw):
            return PrometheusClient(url or server.url, **kw)
        return make

    @pytest.fixture
    def call(self):
        return lambda client: client.alerts()

    @pytest.fixture
    def metrics(self, make):
        return make(timeout=5)

    @pytest.fixture
    def no_alerts(self):
        with PrometheusServer([]) as empty:
            yield PrometheusClient(empty.url + "/")

    def test_the_request_and_a_wrong_url(self, server, metrics) -> None:
        metrics.alerts()
        assert [(r.method, r.path) for r in server.requests] == [("GET", "/api/v1/alerts")]
        with pytest.raises(MetricsError) as info:
            PrometheusClient(server.url + "/prometheus").alerts()
        assert info.value.kind == "not_found" and str(info.value) == (
            f"Prometheus at {server.url}/prometheus has no alerts API endpoint (HTTP 404). Check prometheus.url "
            "(the server's base URL, without /api/v1).")

    def test_prometheus_errors_are_shown_in_its_words(self, server, metrics) -> None:
        server.always(PrometheusServer.error(422, "execution", "query timed out"))
        with pytest.raises(MetricsError, match=r"refused the request \(HTTP 422: query timed out\)"):
            metrics.alerts()

    def test_credentials_in_the_url_are_never_shown(self, server) -> None:
        client = PrometheusClient(server.url.replace("://", "://admin:s3cret@"))
        assert "s3cret" not in client.where and "s3cret" not in repr(client)


class TestFakeMetricsClient(MetricsClientContract):
    @pytest.fixture
    def metrics(self):
        return FakeMetricsClient([Alert({"alertname": n}, {"description": d}, s, a) for n, d, s, a in ALERTS])

    @pytest.fixture
    def no_alerts(self):
        return FakeMetricsClient()


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
        out = prometheus_alerts_tool(empty.url, timeout=2).fn()
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

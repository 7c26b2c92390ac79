"""/api/ai_ops: alert triage over the loopback Prometheus (its real alerts API), the real knowledge base, and
either no chat model (extractive) or one behind the loopback OpenAI-compatible server."""

from __future__ import annotations

import json
from typing import Any, Iterator, Mapping

import httpx
import pytest

from rag_core.agent import knowledge_base_tool
from rag_core.agent.triage import Triage
from rag_core.errors import AgentError
from tests.servers.chat import Completion, OpenAIChatServer
from tests.servers.prometheus import PrometheusServer, alert
from tests.service import live
from tests.service.conftest import CHAT_KEY, model_settings, serve

CPU = alert("HighCPUUsage", "CPU usage above 85% on node-3 for 10 minutes", active_at="2026-05-10T08:00:00Z",
            labels={"instance": "node-3"})
DISK = alert("DiskSpaceLow", "磁盘空间不足：/var 使用率超过 90%", labels={"instance": "node-7"})


@pytest.fixture(scope="module")
def prometheus() -> Iterator[PrometheusServer]:
    with PrometheusServer() as server:
        yield server


@pytest.fixture(scope="module")
def chat_model() -> Iterator[OpenAIChatServer]:
    with OpenAIChatServer(api_key=CHAT_KEY) as server:
        yield server


@pytest.fixture(scope="module")
def offline_ops(kb, prometheus: PrometheusServer) -> Iterator[live.LiveServer]:
    server = serve(kb, prometheus__url=prometheus.url, prometheus__timeout=5)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def model_ops(kb, prometheus: PrometheusServer, chat_model: OpenAIChatServer) -> Iterator[live.LiveServer]:
    server = serve(kb, env={"OPENAI_API_KEY": CHAT_KEY}, prometheus__url=prometheus.url, prometheus__timeout=5,
                   **model_settings(chat_model.base_url))
    yield server
    server.stop()


def ai_ops(server: live.LiveServer) -> list[dict[str, Any]]:
    with httpx.Client(base_url=server.url, timeout=60) as c:
        # as SuperBizAgent's front end calls it: POST, JSON content type, no body
        return live.stream(c, "/api/ai_ops", headers={"Content-Type": "application/json"})


def test_without_prometheus_one_error_event(offline_server: live.LiveServer):
    events = ai_ops(offline_server)
    assert [e["type"] for e in events] == ["error", "done"]
    assert "prometheus.url" in events[0]["data"]


def test_offline_triage_quotes_runbooks_with_citations(offline_ops: live.LiveServer, prometheus: PrometheusServer):
    prometheus.alerts = [CPU, alert("HighCPUUsage", "second pod, same alert"), DISK,
                         alert("PodCrashLooping", "pending one", state="pending")]
    events = ai_ops(offline_ops)
    types = [e["type"] for e in events]
    assert types[-2:] == ["citations", "done"] and "error" not in types
    calls = [e["data"] for e in events if e["type"] == "tool_call"]
    assert [c["name"] for c in calls] == ["query_prometheus_alerts", "search_knowledge_base", "search_knowledge_base"]
    assert "HighCPUUsage" in calls[1]["arguments"]["query"] and "DiskSpaceLow" in calls[2]["arguments"]["query"]
    results = [e["data"] for e in events if e["type"] == "tool_result"]
    assert all(r["ok"] for r in results) and results[1]["lookup"]["evidence"]
    report = live.content_of(events)
    assert report.startswith("**Offline mode**")
    assert "## 1. HighCPUUsage (firing for" in report and "## 2. DiskSpaceLow" in report
    assert "1 pending" in report and "PodCrashLooping" not in report.split("pending")[0]
    citations = events[-2]["data"]
    assert any(k.startswith("runbooks/cpu_high.md#chunk-") for k in citations["citations"])
    assert any(k.startswith("runbooks/disk_full.md#chunk-") for k in citations["citations"])
    assert citations["unverified_citations"] == [] and citations["mode"] == "offline"
    assert all(f"[{k}]" in report for k in citations["citations"])
    assert "Recent logs: no logs source is configured." in report


def test_no_firing_alerts(offline_ops: live.LiveServer, prometheus: PrometheusServer):
    prometheus.alerts = []
    events = ai_ops(offline_ops)
    assert "No alerts are firing" in live.content_of(events) and events[-1]["type"] == "done"


def test_prometheus_failure_is_an_error_event(offline_ops: live.LiveServer, prometheus: PrometheusServer):
    prometheus.script(PrometheusServer.error(503, "unavailable", "query engine overloaded"))
    events = ai_ops(offline_ops)
    assert [e["type"] for e in events] == ["tool_call", "tool_result", "error", "done"]
    assert "HTTP 503" in events[2]["data"] and "query engine overloaded" in events[2]["data"]


def test_model_writes_the_report_from_the_evidence(model_ops: live.LiveServer, prometheus: PrometheusServer,
                                                   chat_model: OpenAIChatServer):
    prometheus.alerts = [CPU]
    chat_model.reset()

    def report(request: Any) -> Completion:
        facts = json.loads(request.json["messages"][-1]["content"].split("\n", 1)[1])
        key = facts["alerts"][0]["runbook_excerpts"][0]["document_id"]
        return Completion.say(f"## HighCPUUsage\nFind the busiest process first [{key}]. Invented [made/up.md#chunk-9].")

    chat_model.reply(report)
    events = ai_ops(model_ops)
    text = live.content_of(events)
    assert text.startswith("## HighCPUUsage") and "Offline" not in text
    [request] = chat_model.chat_requests()
    assert "tools" not in request and request["messages"][0]["role"] == "system"
    assert "node-3" in request["messages"][1]["content"]  # the alert reached the model
    citations = events[-2]["data"]
    assert citations["mode"] == "model" and citations["citations"][0].startswith("runbooks/cpu_high.md#chunk-")
    assert citations["unverified_citations"] == ["made/up.md#chunk-9"]


def test_model_failure_falls_back_to_the_extractive_report(model_ops: live.LiveServer, prometheus: PrometheusServer,
                                                           chat_model: OpenAIChatServer):
    prometheus.alerts = [CPU]
    chat_model.reset()
    chat_model.reply(chat_model.server_error(500))
    events = ai_ops(model_ops)
    notice = next(e for e in events if e["type"] == "notice")["data"]
    assert notice["kind"] == "model_failed" and CHAT_KEY not in notice["message"]
    text = live.content_of(events)
    assert text.startswith("**Alert triage (extractive)**") and "[runbooks/cpu_high.md#chunk-" in text
    assert events[-2]["data"]["mode"] == "offline" and events[-1]["type"] == "done"


# ------------------------------------------------------------------------- logs, through the triage port
class FakeAlerts:
    name = "fake_alerts"

    def __init__(self, alerts: list[dict[str, Any]]) -> None:
        self.alerts = alerts

    def firing(self) -> list[dict[str, Any]]:
        return self.alerts


class FakeLogs:
    name = "fake_logs"

    def __init__(self, fail_for: str = "") -> None:
        self.fail_for = fail_for

    def recent(self, alert: Mapping[str, Any]) -> list[dict[str, Any]]:
        if alert["name"] == self.fail_for:
            raise AgentError("Loki at http://127.0.0.1:3100 answered HTTP 500.")
        return [{"time": "2026-05-10T08:01:00Z", "line": f"{alert['name']}: worker pool saturated"}]


def test_triage_reads_logs_per_alert_and_reports_a_failing_logs_source(kb):
    alerts = [{"name": "HighCPUUsage", "description": "CPU above 85%", "state": "firing", "duration": "2h"},
              {"name": "DiskSpaceLow", "description": "disk full", "state": "firing"}]
    triage = Triage(FakeAlerts(alerts), knowledge_base_tool(kb.retriever), None, FakeLogs(fail_for="DiskSpaceLow"))
    events = list(triage.run())
    names = [e.name for e in events if e.type == "tool_call"]
    assert names == ["fake_alerts", "search_knowledge_base", "fake_logs", "search_knowledge_base", "fake_logs"]
    logs_results = [e for e in events if e.type == "tool_result" and e.name == "fake_logs"]
    assert [r.ok for r in logs_results] == [True, False]
    text = events[-1].text
    assert "HighCPUUsage: worker pool saturated" in text and "logs unavailable: Loki at" in text
    assert "## 1. HighCPUUsage (firing for 2h)" in text


def test_triage_caps_the_alerts_it_investigates(kb):
    alerts = [{"name": f"Alert{n}", "description": "", "state": "firing"} for n in range(5)]
    triage = Triage(FakeAlerts(alerts), knowledge_base_tool(kb.retriever), None, max_alerts=2)
    events = list(triage.run())
    assert sum(e.type == "tool_call" for e in events) == 3
    assert "5 alert(s) firing: `Alert0`, `Alert1` and 3 more." in events[-1].text

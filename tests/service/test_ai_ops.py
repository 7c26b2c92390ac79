"""/api/ai_ops: alert triage over the loopback Prometheus (its real alerts API), the real knowledge base, and
either no chat model (extractive) or one behind the loopback OpenAI-compatible server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from rag_core.agent import knowledge_base_tool
from rag_core.agent.triage import Triage
from rag_core.errors import LogsError
from rag_core.records import Alert, LogQuery
from tests.fakes.metrics import FakeMetricsClient
from tests.servers.chat import Completion, OpenAIChatServer
from tests.servers.loki import LokiServer
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
    server = serve(kb, prometheus__url=prometheus.url, prometheus__timeout=30, prometheus__max_retries=0)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def model_ops(kb, prometheus: PrometheusServer, chat_model: OpenAIChatServer) -> Iterator[live.LiveServer]:
    server = serve(kb, env={"OPENAI_API_KEY": CHAT_KEY}, prometheus__url=prometheus.url, prometheus__timeout=30,
                   prometheus__max_retries=0, **model_settings(chat_model.base_url))
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
    assert "Recent logs: no logs source is configured (logs.loki-url)." in report


def test_no_firing_alerts(offline_ops: live.LiveServer, prometheus: PrometheusServer):
    prometheus.alerts = []
    events = ai_ops(offline_ops)
    assert "No alerts are firing" in live.content_of(events) and events[-1]["type"] == "done"


def test_prometheus_failure_is_an_error_event(offline_ops: live.LiveServer, prometheus: PrometheusServer):
    prometheus.script(PrometheusServer.error(503, "unavailable", "query engine overloaded"))
    events = ai_ops(offline_ops)
    assert [e["type"] for e in events] == ["tool_call", "tool_result", "error", "done"]
    # the reason, not Prometheus' address (the log has it: issue 34)
    assert events[2]["data"].startswith("Prometheus ") and "HTTP 503" in events[2]["data"] and "://" not in \
        events[2]["data"]


def test_model_writes_the_report_from_the_evidence(model_ops: live.LiveServer, prometheus: PrometheusServer,
                                                   chat_model: OpenAIChatServer):
    prometheus.alerts = [CPU]
    chat_model.reset()

    def report(request: Any) -> Completion:
        facts = json.loads(request.json["messages"][-1]["content"].split("\n", 1)[1])
        key = facts["alerts"][0]["runbook_excerpts"][0]["document_id"]
        return Completion.say(
            f"## HighCPUUsage\nFind the busiest process first [{key}]. Invented [made/up.md#chunk-9]."
        )

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


# ------------------------------------------------------------------------- logs, and the ports' fakes
def ns(when: datetime) -> str:
    return str(int(when.timestamp() * 1e9))


def test_triage_reads_each_alerts_logs_from_loki(kb, prometheus: PrometheusServer):
    now = datetime.now(UTC)
    streams = [{"stream": {"app": "order-service", "level": "error"},
                "values": [[ns(now - timedelta(minutes=2)), "order-service: worker pool saturated (512/512)"]]},
               {"stream": {"app": "payment"}, "values": [[ns(now - timedelta(minutes=1)), "payment: all good"]]}]
    prometheus.alerts = [alert("HighCPUUsage", "CPU above 85% on node-3",
                               active_at=(now - timedelta(minutes=20)).isoformat().replace("+00:00", "Z"),
                               labels={"app": "order-service", "instance": "node-3"}),
                         alert("DiskSpaceLow", "disk full", labels={"instance": "node-7"})]
    with LokiServer(streams) as loki:
        server = serve(kb, prometheus__url=prometheus.url, prometheus__max_retries=0, logs__loki_url=loki.url)
        try:
            events = ai_ops(server)
        finally:
            server.stop()
        queries = loki.queries()
    assert [q["query"] for q in queries] == ['{app="order-service"}', '{instance="node-7"}']
    assert int(queries[0]["limit"]) == 5
    calls = [e["data"]["name"] for e in events if e["type"] == "tool_call"]
    assert calls == ["query_prometheus_alerts", "search_knowledge_base", "query_logs", "search_knowledge_base",
                     "query_logs"]
    report = live.content_of(events)
    assert "order-service: worker pool saturated (512/512)" in report and "payment: all good" not in report
    assert "Recent logs: no log lines" not in report.split("## 2.")[0]
    # the second alert carries only `instance`, which the streams do not have: no lines, and the report says so
    assert "no log lines for {instance=\"node-7\"}" in report, report[-600:]


def test_triage_with_the_ports_fakes_reports_a_failing_logs_source(kb):
    class FailingLogs:
        where = "fake://logs"

        def query_range(self, query: LogQuery) -> Any:
            raise LogsError("Loki at fake://logs answered HTTP 500.", "server")

    metrics = FakeMetricsClient([Alert({"alertname": "HighCPUUsage", "app": "order-service"},
                                       {"description": "CPU above 85%"}, "firing", "2026-05-10T08:00:00Z")])
    events = list(Triage(metrics, knowledge_base_tool(kb.retriever), None, FailingLogs()).run())
    logs = [e for e in events if e.type == "tool_result" and e.name == "query_logs"]
    assert [r.ok for r in logs] == [False]
    assert "Recent logs: logs unavailable: Loki at fake://logs answered HTTP 500." in events[-1].text
    assert "## 1. HighCPUUsage (firing for" in events[-1].text


def test_triage_caps_the_alerts_it_investigates(kb):
    metrics = FakeMetricsClient([Alert({"alertname": f"Alert{n}"}, {}, "firing") for n in range(5)])
    events = list(Triage(metrics, knowledge_base_tool(kb.retriever), None, max_alerts=2).run())
    assert sum(e.type == "tool_call" for e in events) == 3
    assert "5 alert(s) firing: `Alert0`, `Alert1` and 3 more." in events[-1].text

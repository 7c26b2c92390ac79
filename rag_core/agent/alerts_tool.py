"""`query_prometheus_alerts`, the seed's QueryMetricsTools: the active alerts from a `MetricsClient`
(Prometheus, in rag_core.clients.prometheus). The tool keeps the first alert of each `alertname`, as the
seed does (one line per kind of problem, not one per pod). Failures reach the model as an error object with
the client's message.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ..clients.prometheus import PrometheusClient
from ..ports import MetricsClient
from ..records import Alert
from .tools import Tool, ToolOutput


def human_duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{days}d"] if days else []
    if hours:
        parts.append(f"{hours}h")
    if minutes and not days:
        parts.append(f"{minutes}m")
    if not parts:
        parts.append(f"{secs}s")
    return " ".join(parts)


def simplify_alerts(alerts: list[Alert], now: datetime) -> list[dict[str, str]]:
    """The first alert of each name: name, description, state, since when and for how long."""
    seen: set[str] = set()
    out = []
    for alert in alerts:
        if alert.name in seen:
            continue
        seen.add(alert.name)
        started = alert.started
        out.append({
            "name": alert.name,
            "description": alert.description,
            "state": alert.state,
            "active_since": alert.active_at,
            "duration": human_duration((now - started).total_seconds()) if started else "",
        })
    return out


def prometheus_alerts_tool(client: MetricsClient | str, timeout: float = 10.0,
                           now: Callable[[], datetime] | None = None) -> Tool:
    """The tool over a metrics client (or, for convenience, a Prometheus URL)."""
    metrics = PrometheusClient(client, timeout=timeout) if isinstance(client, str) else client
    clock = now or (lambda: datetime.now(UTC))

    def query_prometheus_alerts() -> ToolOutput:
        """The alerts currently active (firing or pending) in Prometheus: name, description, state, since when
        and for how long. Use it when the person asks what is alerting or broken right now, or before
        diagnosing a production problem; then search the knowledge base for the runbook of each alert.
        查询 Prometheus 当前活跃的告警。"""
        simplified = simplify_alerts(metrics.alerts(), clock())  # a MetricsError reaches the model as an error
        data: dict[str, Any] = {"alerts": simplified, "count": len(simplified)}
        if not simplified:
            data["message"] = "No alerts are active in Prometheus."
        return ToolOutput(data)

    return Tool.from_function(query_prometheus_alerts)

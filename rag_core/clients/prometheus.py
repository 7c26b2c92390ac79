"""Prometheus: `PrometheusClient` (the `MetricsClient` port: alerts over the real HTTP API, usable outside
the agent, e.g. by alert triage) and `query_prometheus_alerts`, the seed's QueryMetricsTools.

`GET <prometheus.url>/api/v1/alerts` answers `{"status": "success", "data": {"alerts": [...]}}`, each alert
with `labels` (`alertname`, ...), `annotations` (`description`, `summary`), `state`, `activeAt` and
`value`. The tool keeps the first alert of each `alertname`, as the seed does (one line per kind of
problem, not one per pod). Failures reach the model as an error object with the client's message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Mapping

from ..config import redact_uri
from ..errors import MetricsError
from ..ports import MetricsClient
from ..remote import Endpoint, MalformedReply, RemoteAdapter
from ..remote.http import request_json
from .tools import Tool, ToolOutput


@dataclass(frozen=True)
class Alert:
    """One alert as Prometheus lists it."""

    labels: Mapping[str, str]
    annotations: Mapping[str, str] = field(default_factory=dict)
    state: str = ""  # "firing" | "pending"
    active_at: str = ""  # as Prometheus wrote it (RFC 3339, nanoseconds)
    value: str = ""

    @property
    def name(self) -> str:
        return str(self.labels.get("alertname") or "(unnamed alert)")

    @property
    def description(self) -> str:
        return str(self.annotations.get("description") or self.annotations.get("summary") or "")

    @property
    def started(self) -> datetime | None:
        return parse_time(self.active_at)


class PrometheusClient(RemoteAdapter):
    """Prometheus's HTTP API at `url` (its base URL, without /api/v1)."""

    def __init__(self, url: str, *, timeout: float = 10.0, max_retries: int = 1, **adapter: Any) -> None:
        if not url:
            raise MetricsError("Prometheus needs prometheus.url (e.g. http://localhost:9090).", "config")
        self._base = url.rstrip("/")
        endpoint = Endpoint(f"Prometheus at {self.where}", "prometheus", MetricsError, path="alerts API",
                            url_setting="prometheus.url", url_hint=" (the server's base URL, without /api/v1)")
        super().__init__(endpoint, timeout=timeout, max_retries=max_retries, **adapter)

    def __repr__(self) -> str:
        return f"PrometheusClient({self.where!r})"

    @property
    def where(self) -> str:
        return redact_uri(self._base)

    def alerts(self) -> list[Alert]:
        return self._call(self._get_alerts)

    def _get_alerts(self) -> list[Alert]:
        payload = request_json("GET", f"{self._base}/api/v1/alerts", timeout=self.policy.timeout)
        if isinstance(payload, dict) and payload.get("status") == "error":
            raise MetricsError(f"{self.endpoint.subject} reported an error: {str(payload.get('error'))[:200]}.",
                               "server")
        data = payload.get("data") if isinstance(payload, dict) else None
        alerts = data.get("alerts") if isinstance(data, dict) else None
        if not isinstance(alerts, list):
            raise MalformedReply("answered without the alerts API's data")
        return [_alert(a) for a in alerts if isinstance(a, dict)]


def _alert(raw: Mapping[str, Any]) -> Alert:
    def strings(value: Any) -> dict[str, str]:
        return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}

    return Alert(strings(raw.get("labels")), strings(raw.get("annotations")), str(raw.get("state") or ""),
                 str(raw.get("activeAt") or ""), str(raw.get("value") or ""))


def parse_time(value: str) -> datetime | None:
    # Prometheus writes nanoseconds ("2026-05-10T08:12:31.123456789Z"); Python reads at most microseconds.
    m = re.match(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:?\d\d)?$", value or "")
    if not m:
        return None
    fraction = (m.group(2) or "0")[:6].ljust(6, "0")
    offset = m.group(3) or "Z"
    offset = "+00:00" if offset == "Z" else offset
    try:
        return datetime.fromisoformat(f"{m.group(1)}.{fraction}{offset}")
    except ValueError:
        return None


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
    clock = now or (lambda: datetime.now(timezone.utc))

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

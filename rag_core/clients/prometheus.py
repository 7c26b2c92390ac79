"""Prometheus: `PrometheusClient`, the `MetricsClient` port over the real HTTP API (what the agent's
`query_prometheus_alerts` tool, rag_core.agent.alerts_tool, and alert triage read).

`GET <prometheus.url>/api/v1/alerts` answers `{"status": "success", "data": {"alerts": [...]}}`, each alert
with `labels` (`alertname`, ...), `annotations` (`description`, `summary`), `state`, `activeAt` and
`value`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..config import redact_uri
from ..errors import MetricsError
from ..records import Alert
from ..remote import Endpoint, MalformedReply, RemoteAdapter
from ..remote.http import request_json


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

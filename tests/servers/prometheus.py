"""A fake Prometheus speaking the real HTTP API for alerts: `GET /api/v1/alerts`.

    with PrometheusServer() as prom:
        prom.alerts = [alert("HighCPUUsage", "CPU above 85% on node-3", active_at="2026-05-10T08:00:00.123456789Z")]
        ...  # point prometheus.url at prom.url

The answer has the real shape: {"status": "success", "data": {"alerts": [{"labels": {...}, "annotations":
{...}, "state": "firing", "activeAt": "...", "value": "..."}]}}. Unknown paths get Prometheus's error shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import FakeServer, RecordedRequest, Reply

__all__ = ["PrometheusServer", "alert"]


def alert(name: str, description: str = "", *, state: str = "firing", active_at: str = "2026-05-10T08:00:00Z",
          value: str = "1e+00", labels: Mapping[str, str] | None = None, summary: str | None = None) -> dict[str, Any]:
    annotations = {"description": description} if description else {}
    if summary is not None:
        annotations["summary"] = summary
    return {"labels": {"alertname": name, "severity": "warning", **(labels or {})}, "annotations": annotations,
            "state": state, "activeAt": active_at, "value": value}


class PrometheusServer(FakeServer):
    def __init__(self, alerts: list[dict[str, Any]] | None = None) -> None:
        super().__init__()
        self.alerts: list[dict[str, Any]] = list(alerts or [])

    @staticmethod
    def error(status: int, error_type: str, message: str) -> Reply:
        return Reply.json(status, {"status": "error", "errorType": error_type, "error": message})

    def handle(self, request: RecordedRequest) -> Reply:
        path = request.path.split("?")[0]
        if path != "/api/v1/alerts":
            return Reply.text(404, "404 page not found\n")
        if request.method not in ("GET",):
            return self.error(405, "bad_data", f"method {request.method} not allowed")
        return Reply.json(200, {"status": "success", "data": {"alerts": self.alerts}})

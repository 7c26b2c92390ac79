"""`query_prometheus_alerts`: the seed's QueryMetricsTools, against the real Prometheus HTTP API.

`GET <prometheus.url>/api/v1/alerts` answers `{"status": "success", "data": {"alerts": [...]}}`, each alert
with `labels` (`alertname`, ...), `annotations` (`description`, `summary`), `state`, `activeAt` and
`value`. As in the seed, only the first alert of each `alertname` is kept (one line per kind of
problem, not one per pod). Failures go back to the model as an error object.
"""

from __future__ import annotations

import json
import re
import socket
import urllib.error
import urllib.request
from datetime import datetime, timezone
from typing import Any, Callable

from ..config import redact_uri
from .tools import Tool, ToolOutput


def _parse_time(value: str) -> datetime | None:
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


def simplify_alerts(alerts: list[dict[str, Any]], now: datetime) -> list[dict[str, str]]:
    seen: set[str] = set()
    out = []
    for alert in alerts:
        labels = alert.get("labels") or {}
        name = str(labels.get("alertname") or "(unnamed alert)")
        if name in seen:
            continue
        seen.add(name)
        annotations = alert.get("annotations") or {}
        active_at = str(alert.get("activeAt") or "")
        started = _parse_time(active_at)
        out.append({
            "name": name,
            "description": str(annotations.get("description") or annotations.get("summary") or ""),
            "state": str(alert.get("state") or ""),
            "active_since": active_at,
            "duration": human_duration((now - started).total_seconds()) if started else "",
        })
    return out


def prometheus_alerts_tool(url: str, timeout: float = 10.0, now: Callable[[], datetime] | None = None) -> Tool:
    base = url.rstrip("/")
    endpoint = f"{base}/api/v1/alerts"
    where = f"Prometheus at {redact_uri(base)}"
    clock = now or (lambda: datetime.now(timezone.utc))

    def query_prometheus_alerts() -> ToolOutput:
        """The alerts currently active (firing or pending) in Prometheus: name, description, state, since when
        and for how long. Use it when the person asks what is alerting or broken right now, or before
        diagnosing a production problem; then search the knowledge base for the runbook of each alert.
        查询 Prometheus 当前活跃的告警。"""
        request = urllib.request.Request(endpoint, headers={"Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - configured URL
                body = response.read()
        except urllib.error.HTTPError as exc:
            detail = _prometheus_error(exc.read())
            return ToolOutput.failure(f"{where} answered HTTP {exc.code}{': ' + detail if detail else ''}. "
                                      "Check prometheus.url.")
        except (urllib.error.URLError, socket.timeout, TimeoutError, ConnectionError) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, (socket.timeout, TimeoutError)):
                text = f"did not answer within {timeout:g} s"
            elif isinstance(reason, ConnectionRefusedError):
                text = "did not answer (connection refused)"
            else:
                text = "could not be reached"
            return ToolOutput.failure(f"{where} {text}; alerts are unavailable. Check prometheus.url.")
        try:
            payload = json.loads(body)
            if payload.get("status") != "success":
                detail = str(payload.get("error") or "status is not success")
                return ToolOutput.failure(f"{where} reported an error: {detail[:200]}.")
            alerts = payload["data"]["alerts"]
            if not isinstance(alerts, list):
                raise TypeError
        except (ValueError, KeyError, TypeError, AttributeError):
            return ToolOutput.failure(f"{where} did not return the alerts API's JSON; check prometheus.url "
                                      "(the server's base URL, without /api/v1).")
        simplified = simplify_alerts([a for a in alerts if isinstance(a, dict)], clock())
        data: dict[str, Any] = {"alerts": simplified, "count": len(simplified)}
        if not simplified:
            data["message"] = "No alerts are active in Prometheus."
        return ToolOutput(data)

    return Tool.from_function(query_prometheus_alerts)


def _prometheus_error(body: bytes) -> str:
    try:
        return str(json.loads(body).get("error") or "")[:200]
    except (ValueError, AttributeError):
        return ""

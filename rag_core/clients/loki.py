"""Grafana Loki: `LokiClient`, the `LogsClient` port over `/loki/api/v1/query_range` (what the agent's
`query_logs` tool, rag_core.agent.logs_tool, and alert triage read).

A query is a LogQL stream selector (`{app="order-service", level="error"}`), an optional line filter
(`|= "text"`, the text escaped so it cannot change the query), a time range and a limit. Loki answers
`{"status": "success", "data": {"resultType": "streams", "result": [{"stream": {labels}, "values":
[["<unix ns>", "<line>"], ...]}]}}`; lines of all streams are merged, newest first. Loki's refusals
(a LogQL syntax error, a range or limit beyond its configuration) come back as its own words.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from ..config import redact_uri
from ..errors import LogsError
from ..records import LogLine, LogQuery, LogResult
from ..remote import Endpoint, MalformedReply, RemoteAdapter
from ..remote.http import request_json


class LokiClient(RemoteAdapter):
    """Loki's HTTP API at `url` (its base URL, without /loki/api/v1). `token`: sent as a Bearer token;
    `tenant`: the X-Scope-OrgID header of a multi-tenant Loki."""

    def __init__(self, url: str, *, token: str = "", token_env: str = "", tenant: str = "", timeout: float = 10.0,
                 max_retries: int = 1, now: Callable[[], datetime] | None = None, **adapter: Any) -> None:
        if not url:
            raise LogsError("Loki needs logs.loki-url (e.g. http://localhost:3100).", "config")
        self._base = url.rstrip("/")
        self._headers = {**({"Authorization": f"Bearer {token}"} if token else {}),
                         **({"X-Scope-OrgID": tenant} if tenant else {})}
        self._now = now or (lambda: datetime.now(UTC))
        endpoint = Endpoint(f"Loki at {self.where}", "logs", LogsError, path="query_range API",
                            key_env=token_env, has_key=bool(token), url_setting="logs.loki-url",
                            url_hint=" (the server's base URL, without /loki/api/v1)",
                            bad_request_hint=" Check the LogQL selector and the time range.")
        super().__init__(endpoint, timeout=timeout, max_retries=max_retries, secret=token, **adapter)

    def __repr__(self) -> str:  # never shows the token
        return f"LokiClient({self.where!r})"

    @property
    def where(self) -> str:
        return redact_uri(self._base)

    def query_range(self, query: LogQuery) -> LogResult:
        logql = query.logql()
        if query.limit < 1:
            raise LogsError(f"The log line limit must be at least 1, got {query.limit}.", "bad_request")
        end = _utc(query.end or self._now())
        start = _utc(query.start) if query.start else end - timedelta(hours=1)
        if start >= end:
            raise LogsError(f"The time range is empty: {start.isoformat()} is not before {end.isoformat()}.",
                            "bad_request")
        params = {"query": logql, "start": str(to_ns(start)), "end": str(to_ns(end)), "limit": str(query.limit),
                  "direction": query.direction}
        payload = self._call(lambda: request_json("GET", f"{self._base}/loki/api/v1/query_range", params=params,
                                                  headers=self._headers, timeout=self.policy.timeout))
        lines = _lines(payload)
        lines.sort(key=lambda line: line.time, reverse=query.direction == "backward")
        return LogResult(query, logql, start, end, tuple(lines[:query.limit]))


def _lines(payload: Any) -> list[LogLine]:
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, dict) or not isinstance(data.get("result"), list):
        raise MalformedReply("answered without the query_range API's data")
    if data.get("resultType") not in (None, "streams"):
        raise MalformedReply(f"answered with {data.get('resultType')!r} results instead of log streams")
    lines = []
    for stream in data["result"]:
        labels = stream.get("stream") if isinstance(stream, dict) else None
        values = stream.get("values") if isinstance(stream, dict) else None
        if not isinstance(labels, dict) or not isinstance(values, list):
            raise MalformedReply("answered with a stream without labels or values")
        for value in values:
            try:
                ns, text = int(value[0]), str(value[1])
            except (TypeError, ValueError, IndexError):
                raise MalformedReply(f"answered with a log entry that is not [timestamp, line]: {str(value)[:60]!r}") \
                    from None
            lines.append(LogLine(from_ns(ns), {str(k): str(v) for k, v in labels.items()}, text))
    return lines


def _utc(when: datetime) -> datetime:
    return when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)


def to_ns(when: datetime) -> int:
    """Unix nanoseconds, as Loki writes times (exact to the microsecond)."""
    return int(_utc(when).replace(microsecond=0).timestamp()) * 1_000_000_000 + when.microsecond * 1000


def from_ns(ns: int) -> datetime:
    return datetime.fromtimestamp(ns // 1_000_000_000, UTC) + timedelta(microseconds=ns % 10**9 // 1000)

"""Grafana Loki: `LokiClient` (the `LogsClient` port: `/loki/api/v1/query_range`, usable outside the agent,
e.g. by alert triage) and `query_logs`, the seed's fourth tool (QueryLogsTools).

A query is a LogQL stream selector (`{app="order-service", level="error"}`), an optional line filter
(`|= "text"`, the text escaped so it cannot change the query), a time range and a limit. Loki answers
`{"status": "success", "data": {"resultType": "streams", "result": [{"stream": {labels}, "values":
[["<unix ns>", "<line>"], ...]}]}}`; lines of all streams are merged, newest first. Loki's refusals
(a LogQL syntax error, a range or limit beyond its configuration) come back as its own words.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Any, Callable, Literal, Mapping

from ..config import redact_uri
from ..errors import LogsError
from ..ports import LogsClient
from ..remote import Endpoint, MalformedReply, RemoteAdapter
from ..remote.http import request_json
from .tools import Tool, ToolOutput

_STRING = r'"(?:[^"\\]|\\.)*"|`[^`]*`'
_MATCHER = re.compile(rf'\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*({_STRING})\s*')
MAX_LINE_CHARS = 500  # a log line longer than this is clipped for the model (stack traces...)


def parse_selector(selector: str) -> list[tuple[str, str, str]]:
    """(label, operator, value) of each matcher in a LogQL stream selector, or LogsError saying what is
    wrong (the usual mistakes: no braces, single quotes, a pipeline where only the selector belongs)."""
    text = (selector or "").strip()
    if not (text.startswith("{") and text.endswith("}")):
        raise LogsError(f"The LogQL selector {selector!r} must be a stream selector in braces, e.g. "
                        '{app="order-service"} (put text to look for in the line filter instead).', "bad_request")
    body, matchers, pos = text[1:-1], [], 0
    while pos < len(body):
        m = _MATCHER.match(body, pos)
        if not m:
            raise LogsError(f"The LogQL selector {selector!r} is not a list of label matchers such as "
                            '{app="order-service", level=~"error|warn"} (values in double quotes).', "bad_request")
        raw = m.group(3)
        value = raw[1:-1] if raw.startswith("`") else json.loads(raw)
        matchers.append((m.group(1), m.group(2), value))
        pos = m.end()
        if pos < len(body):
            if body[pos] != ",":
                raise LogsError(f"The LogQL selector {selector!r}: separate matchers with commas.", "bad_request")
            pos += 1
    if not matchers:
        raise LogsError("The LogQL selector is empty: name at least one label, e.g. {app=\"order-service\"}.",
                        "bad_request")
    return matchers


@dataclass(frozen=True)
class LogQuery:
    selector: str  # a LogQL stream selector, checked by parse_selector
    contains: str = ""  # only lines containing this text (case-sensitive); "" for all lines
    start: datetime | None = None  # default: end - 1 hour
    end: datetime | None = None  # default: now
    limit: int = 100
    direction: Literal["backward", "forward"] = "backward"  # backward: newest first

    def logql(self) -> str:
        parse_selector(self.selector)
        query = self.selector.strip()
        if self.contains:
            query += f" |= {json.dumps(self.contains, ensure_ascii=False)}"  # a LogQL (Go) string literal
        return query


@dataclass(frozen=True)
class LogLine:
    time: datetime  # UTC
    labels: Mapping[str, str]
    line: str


@dataclass(frozen=True)
class LogResult:
    request: LogQuery
    query: str  # the LogQL sent
    start: datetime  # the range searched (UTC)
    end: datetime
    lines: tuple[LogLine, ...] = ()

    @property
    def limit(self) -> int:
        return self.request.limit

    @property
    def truncated(self) -> bool:
        """True when the limit was reached: there may be more lines in the range."""
        return len(self.lines) >= self.limit

    @property
    def fixed_labels(self) -> dict[str, str]:
        """Labels every line has by the selector's equality matchers (not worth repeating per line)."""
        return {label: value for label, op, value in parse_selector(self.request.selector) if op == "="}


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
        self._now = now or (lambda: datetime.now(timezone.utc))
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
    return when.astimezone(timezone.utc) if when.tzinfo else when.replace(tzinfo=timezone.utc)


def to_ns(when: datetime) -> int:
    """Unix nanoseconds, as Loki writes times (exact to the microsecond)."""
    return int(_utc(when).replace(microsecond=0).timestamp()) * 1_000_000_000 + when.microsecond * 1000


def from_ns(ns: int) -> datetime:
    return datetime.fromtimestamp(ns // 1_000_000_000, timezone.utc) + timedelta(microseconds=ns % 10**9 // 1000)


# ------------------------------------------------------------------------------------------------ the tool
MAX_MINUTES = 7 * 24 * 60
MAX_LIMIT = 200


def logs_tool(client: LogsClient, tz: tzinfo = timezone.utc, now: Callable[[], datetime] | None = None) -> Tool:
    """`query_logs` over a logs client. Times the model writes without an offset are read in `tz`
    (chat.timezone, the zone of the date-time tool), and times it gets back are in `tz` too."""
    clock = now or (lambda: datetime.now(timezone.utc))

    def query_logs(selector: str, contains: str = "", minutes: int = 60, end: str = "", limit: int = 50) -> ToolOutput:
        """Search application logs in Grafana Loki. Use it when diagnosing an alert or an incident: after
        finding what is alerting and reading its runbook, look at the logs of the affected service around
        that time (errors first). Lines come back newest first.
        查询 Loki 中的应用日志（排查告警或故障时使用）。

        Args:
            selector: LogQL stream selector naming the logs, e.g. {app="order-service"} or {namespace="prod", level=~"error|warn"}.
            contains: Only lines containing this text (case-sensitive), e.g. "OutOfMemoryError"; empty for all lines.
            minutes: How far back from `end` to look, in minutes (1 to 10080).
            end: End of the time range, ISO 8601 (e.g. 2026-05-10T10:30:00+08:00); empty means now.
            limit: Most lines to return (1 to 200).
        """
        if not 1 <= minutes <= MAX_MINUTES:
            return ToolOutput.failure(f"minutes must be between 1 and {MAX_MINUTES}, got {minutes}.")
        if not 1 <= limit <= MAX_LIMIT:
            return ToolOutput.failure(f"limit must be between 1 and {MAX_LIMIT}, got {limit}.")
        try:
            until = datetime.fromisoformat(end.strip()) if end.strip() else clock()
        except ValueError:
            return ToolOutput.failure(f"end {end!r} is not an ISO 8601 time such as 2026-05-10T10:30:00+08:00.")
        if until.tzinfo is None:
            until = until.replace(tzinfo=tz)
        result = client.query_range(LogQuery(selector, contains, until - timedelta(minutes=minutes), until, limit))
        fixed = result.fixed_labels
        data: dict[str, Any] = {
            "query": result.query, "from": result.start.astimezone(tz).isoformat(),
            "to": result.end.astimezone(tz).isoformat(), "count": len(result.lines), "truncated": result.truncated,
            "lines": [{"time": line.time.astimezone(tz).isoformat(),
                       "labels": {k: v for k, v in line.labels.items() if fixed.get(k) != v},
                       "line": line.line if len(line.line) <= MAX_LINE_CHARS else line.line[:MAX_LINE_CHARS] + "…"}
                      for line in result.lines]}
        if not result.lines:
            data["message"] = ("No log lines matched in this time range. Try a wider range, fewer labels, or no "
                               "line filter; say so if there is still nothing.")
        return ToolOutput(data)

    return Tool.from_function(query_logs)


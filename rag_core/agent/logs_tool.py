"""`query_logs`, the seed's fourth tool (QueryLogsTools): log lines from a `LogsClient` (Grafana Loki, in
rag_core.clients.loki), in the chat's time zone, for the model to read.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from ..ports import LogsClient
from ..records import LogQuery
from .tools import Tool, ToolOutput

MAX_LINE_CHARS = 500  # a log line longer than this is clipped for the model (stack traces...)
MAX_MINUTES = 7 * 24 * 60
MAX_LIMIT = 200


def logs_tool(client: LogsClient, tz: tzinfo = UTC, now: Callable[[], datetime] | None = None) -> Tool:
    """`query_logs` over a logs client. Times the model writes without an offset are read in `tz`
    (chat.timezone, the zone of the date-time tool), and times it gets back are in `tz` too."""
    clock = now or (lambda: datetime.now(UTC))

    def query_logs(selector: str, contains: str = "", minutes: int = 60, end: str = "", limit: int = 50) -> ToolOutput:
        """Search application logs in Grafana Loki. Use it when diagnosing an alert or an incident: after
        finding what is alerting and reading its runbook, look at the logs of the affected service around
        that time (errors first). Lines come back newest first.
        查询 Loki 中的应用日志（排查告警或故障时使用）。

        Args:
            selector: LogQL stream selector naming the logs, e.g. {app="order-service"} or
                {namespace="prod", level=~"error|warn"}.
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


"""A logs client without a server: Loki-shaped streams in memory, selected by the fake Loki's LogQL rules."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from rag_core.clients.loki import from_ns, to_ns
from rag_core.records import LogLine, LogQuery, LogResult
from tests.servers.loki import parse_logql, select


class FakeLogsClient:
    where = "fake://logs"

    def __init__(self, streams: list[dict[str, Any]], now: Callable[[], datetime]) -> None:
        self.streams = streams
        self._now = now

    def query_range(self, query: LogQuery) -> LogResult:
        logql = query.logql()
        end = query.end or self._now()
        start = query.start or end - timedelta(hours=1)
        matchers, filters = parse_logql(logql)
        entries = select(self.streams, matchers, filters, to_ns(start), to_ns(end), query.direction)[:query.limit]
        lines = tuple(LogLine(from_ns(int(ts)), dict(labels), line) for labels, ts, line in entries)
        return LogResult(query, logql, start, end, lines)

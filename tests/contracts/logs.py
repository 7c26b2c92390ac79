"""The `LogsClient` contract (rag_core/ports.py): what the query_logs tool and alert triage rely on.

Subclass `LogsClientContract` with a `logs` fixture: a client whose store holds `STREAMS` and whose
clock reads `NOW`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rag_core.errors import LogsError
from rag_core.ports import LogsClient
from rag_core.records import LogQuery

NOW = datetime(2026, 5, 10, 10, 30, tzinfo=UTC)


def ns(minutes_ago: float) -> str:
    return str(int((NOW - timedelta(minutes=minutes_ago)).timestamp() * 1e9))


STREAMS = [
    {"stream": {"app": "order-service", "level": "error", "pod": "order-1"},
     "values": [[ns(5), "java.lang.OutOfMemoryError: Java heap space"], [ns(50), "timeout calling payment"]]},
    {"stream": {"app": "order-service", "level": "info", "pod": "order-2"},
     "values": [[ns(2), "GET /orders 200 12ms"], [ns(30), "GET /orders 200 9ms"]]},
    {"stream": {"app": "payment", "level": "error", "pod": "pay-1"},
     "values": [[ns(10), "connection refused to db:5432"], [ns(90), "old error"]]},
]


class LogsClientContract:
    @pytest.fixture
    def logs(self) -> LogsClient:
        raise NotImplementedError

    def test_is_a_logs_client_that_names_its_server(self, logs) -> None:
        assert isinstance(logs, LogsClient) and logs.where

    def test_lines_of_matching_streams_newest_first(self, logs) -> None:
        result = logs.query_range(LogQuery('{app="order-service"}'))
        assert [line.line for line in result.lines] == [
            "GET /orders 200 12ms",
            "java.lang.OutOfMemoryError: Java heap space",
            "GET /orders 200 9ms",
            "timeout calling payment",
        ]
        assert result.lines[0].labels == {"app": "order-service", "level": "info", "pod": "order-2"}
        assert result.lines[0].time == NOW - timedelta(minutes=2) and result.end == NOW
        assert result.start == NOW - timedelta(hours=1) and not result.truncated

    def test_line_filter_matchers_range_and_limit(self, logs) -> None:
        assert [x.line for x in logs.query_range(LogQuery('{app="order-service"}', contains="OutOfMemory")).lines] == [
            "java.lang.OutOfMemoryError: Java heap space"]
        errors = logs.query_range(
            LogQuery('{level="error", app=~"order.*|payment"}', start=NOW - timedelta(minutes=20))
        )
        assert [x.line for x in errors.lines] == ["java.lang.OutOfMemoryError: Java heap space",
                                                  "connection refused to db:5432"]
        limited = logs.query_range(LogQuery('{app=~".+"}', limit=2, start=NOW - timedelta(hours=2)))
        assert [x.line for x in limited.lines] == [
            "GET /orders 200 12ms",
            "java.lang.OutOfMemoryError: Java heap space",
        ]
        assert limited.truncated

    def test_a_line_filter_cannot_change_the_query(self, logs) -> None:
        sneaky = logs.query_range(LogQuery('{app="order-service"}', contains='x" or "'))
        assert sneaky.lines == () and sneaky.query == '{app="order-service"} |= "x\\" or \\""'

    def test_nothing_found_is_an_empty_result(self, logs) -> None:
        assert logs.query_range(LogQuery('{app="nobody"}')).lines == ()

    @pytest.mark.parametrize("selector", ['app="order-service"', "{app='order-service'}", "{}",
                                          '{app="a" level="b"}'])
    def test_a_selector_that_is_not_logql_is_refused_before_any_request(self, logs, selector) -> None:
        with pytest.raises(LogsError) as info:
            logs.query_range(LogQuery(selector))
        assert info.value.kind == "bad_request" and "selector" in str(info.value)

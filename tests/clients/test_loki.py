"""Loki: the logs client (contract + failures through a server speaking `/loki/api/v1/query_range`); the
`query_logs` tool over it is tested in tests/agent/test_logs_tool.py."""

from __future__ import annotations

from datetime import timedelta

import pytest

from rag_core.clients.loki import LokiClient
from rag_core.errors import LogsError
from rag_core.records import LogQuery
from tests.contracts.logs import NOW, STREAMS, LogsClientContract
from tests.contracts.remote import GENEROUS, RemoteFailuresContract
from tests.fakes.logs import FakeLogsClient
from tests.servers.loki import LokiServer

TOKEN = "loki-SECRET-token-91ab"


@pytest.fixture
def loki():
    yield from LokiServer(STREAMS).serve()


class TestLokiClient(LogsClientContract, RemoteFailuresContract):
    error = LogsError

    @pytest.fixture
    def server(self, loki):
        return loki

    @pytest.fixture
    def make(self, server):
        def make(url=None, **kw):
            return LokiClient(url or server.url, now=lambda: NOW, **kw)
        return make

    @pytest.fixture
    def call(self):
        return lambda client: client.query_range(LogQuery('{app="order-service"}'))

    @pytest.fixture
    def logs(self, make):
        return make(timeout=GENEROUS)

    def test_the_request(self, server, logs) -> None:
        logs.query_range(LogQuery('{app="order-service"}', contains="OutOfMemory", limit=7))
        (query,) = server.queries()
        assert server.requests[0].path.startswith("/loki/api/v1/query_range?")
        assert query == {"query": '{app="order-service"} |= "OutOfMemory"', "limit": "7", "direction": "backward",
                         "start": str(int((NOW - timedelta(hours=1)).timestamp()) * 10**9),
                         "end": str(int(NOW.timestamp()) * 10**9)}
        assert server.requests[0].header("authorization") is None

    def test_token_and_tenant(self) -> None:
        with LokiServer(STREAMS, token=TOKEN, tenant="team-a") as server:
            client = LokiClient(server.url, token=TOKEN, token_env="LOKI_TOKEN", tenant="team-a", now=lambda: NOW)
            assert len(client.query_range(LogQuery('{app="payment"}')).lines) == 1
            assert server.requests[0].header("x-scope-orgid") == "team-a"
            assert TOKEN not in repr(client)
            with pytest.raises(LogsError) as info:
                LokiClient(server.url, token="wrong", token_env="LOKI_TOKEN", tenant="team-a",
                           now=lambda: NOW).query_range(LogQuery('{app="payment"}'))
            assert info.value.kind == "auth" and "rejected the API key (HTTP 401). Check LOKI_TOKEN." in str(info.value)
            with pytest.raises(LogsError, match=r"needs an API key \(HTTP 401\): set LOKI_TOKEN"):
                LokiClient(server.url, token_env="LOKI_TOKEN", now=lambda: NOW).query_range(LogQuery('{app="x"}'))

    @pytest.mark.parametrize("query, words", [
        (LogQuery('{app=~".*"}'), "queries require at least one regexp or equality matcher that does not have an "
                                  "empty-compatible value"),
        (LogQuery('{app="order-service"}', limit=6000), "max entries limit per query exceeded, limit > "
                                                        "max_entries_limit (6000 > 5000)"),
        (LogQuery('{app="order-service"}', start=NOW - timedelta(days=40)), "the query time range exceeds the limit"),
    ])
    def test_what_loki_refuses_comes_back_in_its_words(self, logs, query, words) -> None:
        with pytest.raises(LogsError) as info:
            logs.query_range(query)
        assert info.value.kind == "bad_request" and words in str(info.value)
        assert str(info.value).startswith(f"Loki at {logs.where} refused the request (HTTP 400: ")
        assert str(info.value).endswith("Check the LogQL selector and the time range.")


class TestFakeLogsClient(LogsClientContract):
    @pytest.fixture
    def logs(self):
        return FakeLogsClient(STREAMS, now=lambda: NOW)

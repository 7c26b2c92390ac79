"""Prometheus: the metrics client (contract + failures through a server speaking `/api/v1/alerts`); the alerts
tool over it is tested in tests/agent/test_alerts_tool.py."""

from __future__ import annotations

import pytest

from rag_core.clients.prometheus import PrometheusClient
from rag_core.errors import MetricsError
from rag_core.records import Alert
from tests.contracts.metrics import ALERTS, SERVER_ALERTS, MetricsClientContract
from tests.contracts.remote import GENEROUS, RemoteFailuresContract
from tests.fakes.metrics import FakeMetricsClient
from tests.servers.prometheus import PrometheusServer


@pytest.fixture
def prometheus():
    yield from PrometheusServer(SERVER_ALERTS).serve()


class TestPrometheusClient(MetricsClientContract, RemoteFailuresContract):
    error = MetricsError

    @pytest.fixture
    def server(self, prometheus):
        return prometheus

    @pytest.fixture
    def make(self, server):
        def make(url=None, **kw):
            return PrometheusClient(url or server.url, **kw)
        return make

    @pytest.fixture
    def call(self):
        return lambda client: client.alerts()

    @pytest.fixture
    def metrics(self, make):
        return make(timeout=GENEROUS)

    @pytest.fixture
    def no_alerts(self):
        with PrometheusServer([]) as empty:
            yield PrometheusClient(empty.url + "/")

    def test_the_request_and_a_wrong_url(self, server, metrics) -> None:
        metrics.alerts()
        assert [(r.method, r.path) for r in server.requests] == [("GET", "/api/v1/alerts")]
        with pytest.raises(MetricsError) as info:
            PrometheusClient(server.url + "/prometheus").alerts()
        assert info.value.kind == "not_found" and str(info.value) == (
            f"Prometheus at {server.url}/prometheus has no alerts API endpoint (HTTP 404). Check prometheus.url "
            "(the server's base URL, without /api/v1).")

    def test_prometheus_errors_are_shown_in_its_words(self, server, metrics) -> None:
        server.always(PrometheusServer.error(422, "execution", "query timed out"))
        with pytest.raises(MetricsError, match=r"refused the request \(HTTP 422: query timed out\)"):
            metrics.alerts()

    def test_credentials_in_the_url_are_never_shown(self, server) -> None:
        client = PrometheusClient(server.url.replace("://", "://admin:s3cret@"))
        assert "s3cret" not in client.where and "s3cret" not in repr(client)


class TestFakeMetricsClient(MetricsClientContract):
    @pytest.fixture
    def metrics(self):
        return FakeMetricsClient([Alert({"alertname": n}, {"description": d}, s, a) for n, d, s, a in ALERTS])

    @pytest.fixture
    def no_alerts(self):
        return FakeMetricsClient()

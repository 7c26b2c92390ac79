"""Errors answered by their type (errors.py), through a real uvicorn with the loopback servers failing: a service the
workbench calls that fails is 502 naming it, one that does not answer in time 504; a missing document or knowledge
base 404; an empty knowledge base 409 (service/errors.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from rag_core.bootstrap import build_logs_client, build_metrics_client
from rag_core.errors import (
    EmptyKnowledgeBase,
    InvalidTags,
    KnowledgeBaseNotFound,
    LogsError,
    MetricsError,
    NotIndexed,
    RerankFailed,
    RetrievalError,
    StoreError,
)
from rag_core.records import LogQuery
from rag_core.service.app import create_app
from rag_core.service.errors import from_rag_error
from tests.contracts.remote import HANG, ONCE
from tests.helpers import make_workbench
from tests.servers import Reply
from tests.servers.loki import LokiServer
from tests.servers.prometheus import PrometheusServer
from tests.servers.rerank import OpenAIRerankServer
from tests.service import live

# The clients' timeout is ONCE (3 s): each test waits it out once for its 504, and the answers before (a 200, a 500)
# must come within it, on a loaded machine too. A hanging server waits HANG (30 s) before answering.


def error_of(r: httpx.Response) -> dict[str, Any]:
    assert r.headers["content-type"].startswith("application/json"), r.text
    return r.json()["error"]


def test_a_failing_reranker_with_on_error_fail_is_502_and_a_hanging_one_504(kb):
    with OpenAIRerankServer() as rerank:
        wb = make_workbench(kb.settings.data_dir, kb.embedder, **{
            "rerank.provider": "openai", "rerank.base-url": rerank.base_url, "rerank.model": "test-rerank",
            "rerank.on-error": "fail", "rerank.timeout": ONCE, "rerank.max-retries": 0,
            "rerank.circuit-failures": 2})
        server = live.start(create_app(wb, env={}, close_workbench=False))
        try:
            with httpx.Client(base_url=server.url, timeout=60) as client:
                ok = client.get("/v1/search", params={"query": "disk full"})
                assert ok.status_code == 200 and ok.json()["rerank"]["applied"]

                rerank.always(OpenAIRerankServer.error(500, "CUDA out of memory"))
                r = client.get("/v1/search", params={"query": "disk full"})
                assert r.status_code == 502, r.text
                error = error_of(r)
                assert error["code"] == "upstream_failed" and error["data"] == {"upstream": "reranker"}
                assert "Reranking with openai:test-rerank failed" in error["message"]
                assert "HTTP 500" in error["message"] and "\n" not in error["message"]

                rerank.always(Reply.json(200, {"results": []}, delay=HANG))
                r = client.get("/v1/search", params={"query": "disk full"})
                assert r.status_code == 504, r.text
                error = error_of(r)
                assert error["code"] == "upstream_timeout" and error["data"] == {"upstream": "reranker"}
                assert f"did not answer within {ONCE:g} s" in error["message"]

                # two failures in a row opened its circuit: skipped at once, still the reranker's failure
                sent = len(rerank.requests)
                r = client.get("/v1/search", params={"query": "disk full"})
                assert r.status_code == 502 and error_of(r)["data"] == {"upstream": "reranker"}
                assert "was skipped" in error_of(r)["message"] and len(rerank.requests) == sent
        finally:
            server.stop()
            wb.close()


@pytest.fixture(scope="module")
def prometheus() -> Iterator[PrometheusServer]:
    with PrometheusServer() as server:
        yield server


@pytest.fixture(scope="module")
def loki() -> Iterator[LokiServer]:
    with LokiServer() as server:
        yield server


@pytest.fixture(scope="module")
def probes(kb, prometheus: PrometheusServer, loki: LokiServer) -> Iterator[live.LiveServer]:
    """The service with two routes of the test's own that read Prometheus and Loki through the clients bootstrap
    builds. No route of the service calls them outside a stream today (/api/ai_ops reports their failures as SSE
    `error` events); these stand for the next one that does, so that its failures get their status by type."""
    settings = kb.settings.with_overrides({"prometheus.url": prometheus.url, "prometheus.timeout": ONCE,
                                           "prometheus.max-retries": 0, "logs.loki-url": loki.url,
                                           "logs.timeout": ONCE, "logs.max-retries": 0})
    metrics, logs = build_metrics_client(settings, {}), build_logs_client(settings, {})
    app = create_app(kb, env={}, close_workbench=False)

    @app.get("/v1/probe/alerts")
    def alerts() -> dict[str, int]:
        return {"alerts": len(metrics.alerts())}

    @app.get("/api/probe/logs")  # an /api route: SuperBizAgent's envelope
    def lines() -> dict[str, int]:
        return {"lines": len(logs.query_range(LogQuery('{app="order-service"}')).lines)}

    server = live.start(app)
    yield server
    server.stop()


def test_a_failing_prometheus_is_502_and_a_hanging_one_504(probes: live.LiveServer, prometheus: PrometheusServer):
    with httpx.Client(base_url=probes.url, timeout=60) as client:
        prometheus.always(None)
        assert client.get("/v1/probe/alerts").json() == {"alerts": 0}
        prometheus.always(PrometheusServer.error(500, "internal", "query engine crashed"))
        r = client.get("/v1/probe/alerts")
        assert r.status_code == 502 and error_of(r)["code"] == "upstream_failed"
        assert error_of(r)["data"] == {"upstream": "prometheus"} and error_of(r)["message"].startswith("Prometheus ")
        assert "://" not in error_of(r)["message"]  # the reason, not the address behind the server (issue 34)
        prometheus.always(Reply.json(200, {"status": "success", "data": {"alerts": []}}, delay=HANG))
        r = client.get("/v1/probe/alerts")
        assert r.status_code == 504 and error_of(r)["code"] == "upstream_timeout"
        assert error_of(r)["data"] == {"upstream": "prometheus"} and f"did not answer within {ONCE:g} s" in r.text
    prometheus.always(None)


def test_a_failing_loki_is_502_and_a_hanging_one_504(probes: live.LiveServer, loki: LokiServer):
    with httpx.Client(base_url=probes.url, timeout=60) as client:
        loki.always(None)
        assert client.get("/api/probe/logs").json() == {"lines": 0}
        loki.always(Reply.text(500, "too many outstanding requests\n"))
        r = client.get("/api/probe/logs")
        assert r.status_code == 502
        assert r.json()["code"] == 502 and r.json()["data"] == {"upstream": "loki"}
        assert r.json()["message"].startswith("Loki ") and "://" not in r.json()["message"]
        loki.always(Reply.text(200, "{}", delay=HANG))
        r = client.get("/api/probe/logs")
        assert r.status_code == 504 and r.json()["code"] == 504 and r.json()["data"] == {"upstream": "loki"}
    loki.always(None)


@pytest.mark.parametrize("path, params", [
    ("/v1/kbs/nope/documents", None),  # KnowledgeBaseNotFound
    ("/v1/kbs/BIZ/search", {"query": "disk"}),  # a name differs by case: not found, "did you mean"
    ("/v1/explain", {"query": "disk", "expect": "no/such.md"}),  # NotIndexed
])
def test_a_missing_knowledge_base_or_document_is_404(client: httpx.Client, path: str, params: Any):
    r = client.get(path, params=params)
    assert r.status_code == 404 and error_of(r)["code"] == "not_found", r.text


def test_the_status_follows_the_type_not_the_message():
    """The words of a message never pick the status; its type does."""
    empty = "The knowledge base is empty: ingest documents first."
    assert from_rag_error(EmptyKnowledgeBase(empty)).status == 409
    assert from_rag_error(RetrievalError(empty)).status == 400
    assert from_rag_error(KnowledgeBaseNotFound("gone")).status == 404
    assert from_rag_error(NotIndexed("gone")).status == 404
    assert from_rag_error(InvalidTags("Tag key 'folder' is built in")).status == 400  # a StoreError, but bad input
    assert from_rag_error(StoreError("Tag key 'folder' is built in")).status == 503
    assert from_rag_error(RerankFailed("Reranking failed", deadline=True)).status == 504
    assert from_rag_error(MetricsError("Prometheus at x kept failing (HTTP 500)", "server")).status == 502
    assert from_rag_error(LogsError("Loki at x did not answer within 1 s", "timeout")).status == 504

"""A hanging reranker through the real service (#21 item 6): /v1/search pays its deadline three times, then skips
it at once with a warning, and /v1/health shows the reranker's circuit open. What a search cost shows in the
requests the rerank service received, not in seconds."""

from __future__ import annotations

import dataclasses

import httpx

from rag_core.rerank.circuit import GuardedReranker
from rag_core.rerank.openai_compat import OpenAICompatReranker
from tests.contracts.remote import HANG, arrived
from tests.servers import Reply
from tests.servers.rerank import OpenAIRerankServer
from tests.service.conftest import serve


def test_searches_skip_a_hanging_reranker_and_health_shows_its_circuit(kb) -> None:
    with OpenAIRerankServer() as rerank_server:
        adapter = OpenAICompatReranker(rerank_server.base_url, "test-rerank", "", timeout=0.3, max_retries=0)
        guarded = GuardedReranker(adapter, failures=3, cooldown=60.0)
        server = serve(dataclasses.replace(kb, retriever=kb.retriever.with_reranker(guarded)))
        try:
            with httpx.Client(base_url=server.url, timeout=60) as client:
                health = client.get("/v1/health").json()
                assert health["reranker"] == {"name": "openai:test-rerank", "state": "closed", "failures": 0,
                                              "retry_in_s": 0.0, "last_error": ""}
                rerank_server.always(Reply.json(200, {"results": []}, delay=HANG))  # hangs
                for _ in range(3):
                    body = client.get("/v1/search", params={"query": "disk full"}).json()
                    assert "failed (" in body["warnings"][0] and "0.3 s" in body["warnings"][0]
                body = client.get("/v1/search", params={"query": "disk full"}).json()
                assert arrived(rerank_server, 3)  # skipped at once: no request
                assert body["rerank"]["skipped"] and body["evidence"]
                assert body["warnings"][0].startswith(
                    "Reranking with openai:test-rerank was skipped: it failed 3 times"
                )
                r = client.get("/v1/health")
                assert r.status_code == 200 and r.json()["status"] == "ok"  # searches still answer
                circuit = r.json()["reranker"]
                assert (circuit["state"], circuit["failures"]) == ("open", 3) and 0 < circuit["retry_in_s"] <= 60
                assert "0.3 s" in circuit["last_error"]
        finally:
            server.stop()

"""The rerank stage with a real adapter, configured by settings: `rerank.provider = openai` against a
loopback server speaking the /v1/rerank protocol (tests/servers/rerank.py), through build_workbench, the
lookup path and `search --json`; a failing server falls back with a warning or fails, as configured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_core.cli import main
from rag_core.errors import RetrievalError
from rag_core.rerank.openai_compat import OpenAICompatReranker
from rag_core.retrieval import RerankParams
from tests.helpers import SAMPLE_KB, make_workbench
from tests.servers import Reply
from tests.servers.rerank import OpenAIRerankServer, fake_score

pytestmark = pytest.mark.milvus  # opens Milvus Lite in its tests: not in `make test-unit`

QUERY = "disk usage alert cleanup logs"


@pytest.fixture(scope="module")
def server():
    srv = OpenAIRerankServer().start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def rerank_settings(server):
    return {"rerank.provider": "openai", "rerank.base-url": server.base_url, "rerank.model": "test-rerank",
            "rerank.candidates": 10, "rerank.max-retries": 0}


@pytest.fixture(scope="module")
def wb(tmp_path_factory, local_embedder, rerank_settings):
    wb = make_workbench(Path(tmp_path_factory.mktemp("rerank-wired")), embedder=local_embedder, **rerank_settings)
    reports = wb.ingestor.ingest_paths(
        [SAMPLE_KB / "runbooks" / "disk_full.md", SAMPLE_KB / "runbooks" / "cpu_high.md"]
    )
    assert all(r.status == "added" for r in reports)
    yield wb
    wb.close()


def test_settings_put_the_reranker_in_the_lookup_path(wb, server):
    server.reset()
    assert isinstance(wb.retriever.reranker.inner, OpenAICompatReranker)  # behind its circuit breaker
    result = wb.retriever.lookup(QUERY, retrieve_k=15, return_n=5)
    assert len(server.requests) == 1 and len(server.requests[0].json["documents"]) == 10
    top = result.candidates[:10]
    assert [c.rerank_score for c in top] == [fake_score(QUERY, c.content) for c in top]
    assert [c.rerank_score for c in top] == sorted(c.rerank_score for c in top)[::-1]
    assert [c.fused_rank for c in result.candidates[10:]] == sorted(c.fused_rank for c in result.candidates[10:])
    assert result.rerank.reranker == "openai:test-rerank" and not result.warnings


def test_a_failing_server_falls_back_with_a_warning_or_fails(wb, server):
    server.reset()
    server.always(Reply.json(503, {"object": "error", "message": "overloaded"}))
    try:
        result = wb.retriever.lookup(QUERY)
        assert [c.fused_rank for c in result.candidates] == list(range(1, len(result.candidates) + 1))
        (warning,) = result.warnings
        assert warning.startswith("Reranking with openai:test-rerank failed (") and "503" in warning
        with pytest.raises(RetrievalError, match=r"^Reranking with openai:test-rerank failed: .*503"):
            wb.retriever.lookup(QUERY, rerank=RerankParams(candidates=10, on_error="fail"))
    finally:
        server.always(None)


def test_search_json_shows_the_rerank_stage(wb, rerank_settings, capsys):
    sets = [arg for k, v in rerank_settings.items() for arg in ("--set", f"{k}={v}")]
    code = main(["--data-dir", str(wb.settings.data_dir), *sets, "search", QUERY, "--retrieve-k", "12", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["rerank"]["applied"] and out["rerank"]["candidates"] == 10
    assert any(h["fused_rank"] != h["rank"] for h in out["raw_hits"][:10])
    code = main(["--data-dir", str(wb.settings.data_dir), *sets, "search", QUERY, "--no-rerank", "--json"])
    assert code == 0 and json.loads(capsys.readouterr().out)["rerank"] is None

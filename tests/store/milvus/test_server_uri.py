"""The same code against a Milvus *server* by URI: Milvus Lite's binary serving gRPC on a TCP port
stands in for a Milvus server (the real server speaks the same protocol)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_core.bootstrap import build_workbench
from rag_core.config import load_settings
from rag_core.errors import StoreError
from tests.helpers import SAMPLE_KB
from tests.store.conftest import free_port


def test_ingest_search_delete_through_a_server_uri(milvus_server: str, tmp_path: Path, local_embedder) -> None:
    env = {"MILVUS_URI": milvus_server, "MILVUS_TOKEN": "root:Milvus"}
    settings = load_settings(tmp_path, env=env)
    assert settings.milvus_uri == milvus_server
    wb = build_workbench(settings, env=env, embedder=local_embedder)
    try:
        reports = wb.ingestor.ingest_paths([SAMPLE_KB / "runbooks"])
        assert {r.status for r in reports} == {"added"}
        result = wb.retriever.lookup("磁盘空间不足 disk full")
        assert result.evidence and result.evidence[0].doc_id == "disk_full.md"
        assert wb.ingestor.delete("disk_full.md")
        assert "disk_full.md" not in {d.doc_id for d in wb.store.list_documents()}
    finally:
        wb.close()
    # A second client (another process in real life) may open the same server at the same time.
    wb1 = build_workbench(settings, env=env, embedder=local_embedder)
    wb2 = build_workbench(settings, env=env, embedder=local_embedder)
    assert wb1.store.list_documents() == wb2.store.list_documents()
    wb1.close()
    wb2.close()


def test_an_unreachable_server_gets_a_clear_message(tmp_path: Path, local_embedder) -> None:
    env = {"MILVUS_URI": f"http://127.0.0.1:{free_port()}", "MILVUS_TOKEN": "root:secret-token",
           "RAG_MILVUS_TIMEOUT": "1"}
    with pytest.raises(StoreError) as err:
        build_workbench(load_settings(tmp_path, env=env), env=env, embedder=local_embedder)
    assert "Could not connect to Milvus at http://127.0.0.1:" in str(err.value)
    assert "secret-token" not in str(err.value)

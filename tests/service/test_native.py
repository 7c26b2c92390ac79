"""/v1 over a real uvicorn: search equals the CLI's `search --json`, documents and chunks, health, errors."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest

from rag_core import cli
from rag_core.bootstrap import build_workbench
from rag_core.config import load_settings
from tests.helpers import make_workbench
from tests.servers.embeddings import OpenAIEmbeddingServer
from tests.service import live
from tests.service.conftest import serve


def without_timings(result: dict[str, Any]) -> dict[str, Any]:
    assert set(result["timings"]) >= {"search", "postprocess", "projection", "total"}
    return {k: v for k, v in result.items() if k != "timings"}


@pytest.mark.parametrize(("query", "args"), [
    ("磁盘空间不足怎么办", {"retrieve_k": 20, "return_n": 5, "max_chunks_per_document": 2}),
    ("HighCPUUsage runbook", {"retrieve_k": 8, "return_n": 3, "max_chunks_per_document": 1, "mode": "bm25"}),
    ("payment gateway timeout", {"mode": "dense"}),
])
def test_search_equals_the_cli_json(client: httpx.Client, kb, capsys, query: str, args: dict[str, Any]):
    over_http = client.get("/v1/search", params={"query": query, **args})
    assert over_http.status_code == 200
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in args.items()]
    assert cli.main(["--data-dir", str(kb.settings.data_dir), "search", query, *flags, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert without_timings(over_http.json()) == without_timings(printed)
    assert over_http.json()["raw_hits"] and over_http.json()["evidence"]


def test_search_carries_the_bm25_terms_of_the_query_and_of_every_hit(client: httpx.Client) -> None:
    found = client.get("/v1/search", params={"query": "磁盤空間 disk", "mode": "bm25", "retrieve_k": 5}).json()
    # search mode: the words of a dictionary word too, the compound scored without them (keywords.own_scores)
    assert found["query_terms"] == ["磁盘", "空间", "磁盘空间", "disk"] and found["keywords"]["scored_by"] == "milvus"
    assert found["raw_hits"] and found["keywords"]["exact"] == len(found["raw_hits"])
    for h in found["raw_hits"]:
        assert h["matched_terms"] and set(h["term_shares"]) == set(h["matched_terms"]) and h["bm25_exact"] is True


def test_search_filters_by_doc_id(client: httpx.Client):
    r = client.get("/v1/search", params=[("query", "alert"), ("doc_id", "runbooks/disk_full.md"),
                                         ("doc_id", "runbooks/cpu_high.md")])
    assert r.status_code == 200
    docs = {h["doc_id"] for h in r.json()["raw_hits"]}
    assert docs and docs <= {"runbooks/disk_full.md", "runbooks/cpu_high.md"}
    assert r.json()["params"]["filters"] == {"doc_id": ["runbooks/disk_full.md", "runbooks/cpu_high.md"]}


@pytest.mark.parametrize(("params", "words"), [
    ({}, "query: is required"),
    ({"query": "   "}, "query is empty"),
    ({"query": "x", "retrieve_k": "abc"}, "retrieve_k"),
    ({"query": "x", "retrieve_k": 0}, "retrieve_k"),
    ({"query": "x", "retrieve_k": 2, "return_n": 5}, "return-n (5) cannot be larger than retrieve-k (2)"),
    ({"query": "x", "mode": "fuzzy"}, "mode"),
    ({"query": "x", "dense_weight": 0, "bm25_weight": 0}, "not both zero"),
])
def test_search_bad_input_is_400_with_one_line(client: httpx.Client, params: dict[str, Any], words: str):
    r = client.get("/v1/search", params=params)
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["code"] == "bad_request" and words in error["message"] and "\n" not in error["message"]


@pytest.mark.parametrize(("query", "args"), [
    ("磁盘空间不足怎么办", {"expect": "runbooks/disk_full.md"}),
    ("HighCPUUsage runbook", {"expect": "runbooks/disk_full.md", "retrieve_k": 5, "return_n": 2}),
    ("How do I free disk space?", {"expect": "runbooks/disk_full.md#chunk-1", "mode": "bm25"}),
])
def test_explain_equals_the_cli_json(client: httpx.Client, kb, capsys, query: str, args: dict[str, Any]):
    over_http = client.get("/v1/explain", params={"query": query, **args})
    assert over_http.status_code == 200, over_http.text
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in args.items()]
    assert cli.main(["--data-dir", str(kb.settings.data_dir), "explain", query, *flags, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert over_http.json() == printed
    assert over_http.json()["chunks"] and over_http.json()["doc_id"] == "runbooks/disk_full.md"


@pytest.mark.parametrize(("params", "status", "words"), [
    ({"query": "disk"}, 400, "Say what was expected"),
    ({"query": "disk", "expect": "no/such.md"}, 404, "no/such.md"),
    ({"query": "disk", "expect": "runbooks/disk_full.md", "retrieve_k": 0}, 400, "retrieve_k"),
])
def test_explain_bad_input_is_one_line(client: httpx.Client, params: dict[str, Any], status: int, words: str):
    r = client.get("/v1/explain", params=params)
    assert r.status_code == status, r.text
    message = r.json()["error"]["message"]
    assert words in message and "\n" not in message


def test_search_of_an_empty_knowledge_base_is_409(kb):
    empty = make_workbench(kb.settings.data_dir, kb.embedder, **{"milvus.collection": "service_empty"})
    server = serve(empty)
    try:
        r = httpx.get(f"{server.url}/v1/search", params={"query": "anything"}, timeout=60)
        assert r.status_code == 409
        assert r.json()["error"]["code"] == "empty_knowledge_base" and "ingest" in r.json()["error"]["message"]
    finally:
        server.stop()
        empty.store.drop()
        empty.close()


def test_documents_list_add_chunks_delete(client: httpx.Client, kb):
    listed = client.get("/v1/documents").json()
    assert {"runbooks/cpu_high.md", "policies/oncall_zh.md"} <= {d["doc_id"] for d in listed}
    files = [("files", ("a.md", b"# A\n\nAlpha document about the blue widget.")),
             ("files", ("说明.txt", "蓝色小部件的中文说明，GBK 编码。".encode("gbk")))]
    r = client.post("/v1/documents", files=files, data={"folder": "v1 test/sub"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["counts"] == {"added": 2, "replaced": 0, "unchanged": 0, "failed": 0}
    assert [x["doc_id"] for x in body["reports"]] == ["v1 test/sub/a.md", "v1 test/sub/说明.txt"]
    assert all(x["http_status"] == 200 for x in body["reports"])
    assert str(kb.settings.data_dir) not in r.text

    chunks = client.get("/v1/documents/v1 test/sub/说明.txt/chunks").json()
    assert chunks["doc_id"] == "v1 test/sub/说明.txt" and chunks["version"]
    [chunk] = chunks["chunks"]
    assert chunk["evidence_key"] == "v1 test/sub/说明.txt#chunk-0" and "蓝色小部件" in chunk["content"]
    assert chunk["start"] == 0 and chunk["end"] == len(chunk["content"])

    assert client.delete("/v1/documents/v1%20test/sub/a.md").json() == {"deleted": "v1 test/sub/a.md"}
    assert client.delete("/v1/documents/v1 test/sub/说明.txt").status_code == 200
    gone = client.delete("/v1/documents/v1 test/sub/a.md")
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "not_found"
    assert client.get("/v1/documents/v1 test/sub/a.md/chunks").status_code == 404
    assert not [d for d in client.get("/v1/documents").json() if d["doc_id"].startswith("v1 test/")]


def test_documents_with_some_failures_is_207_and_all_failed_is_the_refusal(client: httpx.Client):
    mixed = [("files", ("ok.md", b"# ok\n\nfine text")), ("files", ("bad.md", b"\x00\x01binary\x00"))]
    r = client.post("/v1/documents", files=mixed, data={"folder": "mixed"})
    assert r.status_code == 207
    reports = r.json()["reports"]
    assert [x["status"] for x in reports] == ["added", "failed"]
    assert 400 <= reports[1]["http_status"] < 500 and "binary" in reports[1]["error"]
    only_bad = client.post("/v1/documents", files=[("files", ("bad.md", b"\x00\x01binary\x00"))])
    assert 400 <= only_bad.status_code < 500
    error = only_bad.json()["error"]
    assert "binary" in error["message"] and error["data"]["reports"][0]["status"] == "failed"
    assert client.delete("/v1/documents/mixed/ok.md").status_code == 200


def test_two_files_naming_one_document_is_409(client: httpx.Client):
    same = [("files", ("twice.md", b"# one")), ("files", ("./twice.md", b"# two"))]
    r = client.post("/v1/documents", files=same, data={"folder": "dup"})
    assert r.status_code == 409 and "dup/twice.md" in r.json()["error"]["message"]


def test_bad_doc_ids_are_400(client: httpx.Client):
    for path in ("/v1/documents/a/../../etc/passwd/chunks", "/v1/documents/%2E%2E/x.md"):
        r = client.request("DELETE" if "chunks" not in path else "GET", path)
        assert r.status_code in (400, 404), r.text  # never served: refused or not a route
    r = client.delete("/v1/documents/x%00y.md")
    assert r.status_code == 400 and r.json()["error"]["code"] == "bad_request"


def test_health_names_store_embedder_chat_and_versions_but_no_paths(client: httpx.Client, kb):
    r = client.get("/v1/health")
    assert r.status_code == 200
    h = r.json()
    assert h["status"] == "ok" and h["store"]["ok"] is True and h["store"]["documents"] >= 10
    assert h["store"]["kind"] == "milvus-lite" and h["embedder"]["dim"] == 512
    assert h["chat"]["mode"] == "offline" and h["auth"] is False
    assert {"python", "pymilvus", "milvus-lite", "fastapi"} <= set(h["versions"])
    assert str(kb.settings.data_dir) not in r.text


def test_unknown_route_and_method_are_json(client: httpx.Client):
    r = client.get("/v1/nothing")
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    r = client.get("/api/nothing")
    assert r.status_code == 404 and r.json()["code"] == 404
    r = client.put("/v1/search")
    assert r.status_code == 405 and r.json()["error"]["code"] == "method_not_allowed"


def test_openapi_page_lists_every_route(offline_server: live.LiveServer):
    schema = httpx.get(f"{offline_server.url}/openapi.json", timeout=60).json()
    assert {"/api/chat", "/api/chat_stream", "/api/chat/clear", "/api/chat/session/{session_id}", "/api/upload",
            "/api/ai_ops", "/v1/search", "/v1/documents", "/v1/documents/{doc_id}", "/v1/documents/{doc_id}/chunks",
            "/v1/health"} <= set(schema["paths"])
    page = httpx.get(f"{offline_server.url}/docs", timeout=60)
    assert page.status_code == 200
    # Swagger UI's own files come from this server, not a CDN: the page works without internet.
    assets = re.findall(r'(?:src|href)="([^"]+\.(?:js|css))"', page.text)
    assert assets and all(a.startswith("/docs/static/") for a in assets)
    for asset in assets:
        assert httpx.get(f"{offline_server.url}{asset}", timeout=60).status_code == 200


def test_a_failing_remote_embedder_is_503_and_health_still_answers(kb):
    key = "sk-embed-SECRET-77aa01"
    with OpenAIEmbeddingServer(api_key=key) as remote:
        model = next(iter(remote.models))
        settings = {"embedding.provider": "openai", "embedding.base-url": remote.base_url, "embedding.model": model,
                    "embedding.max-retries": 0, "embedding.timeout": 30, "milvus.collection": "service_remote"}
        wb = build_workbench(load_settings(data_dir=kb.settings.data_dir, env={}, overrides=settings),
                             env={"OPENAI_API_KEY": key})
        server = serve(wb)
        try:
            files = {"files": ("note.md", b"# Note\n\nThe rollback window is 30 minutes.")}
            assert httpx.post(f"{server.url}/v1/documents", files=files, timeout=60).status_code == 200
            assert httpx.get(f"{server.url}/v1/search", params={"query": "rollback"}, timeout=60).status_code == 200
            remote.always(remote.server_error(500))
            r = httpx.get(f"{server.url}/v1/search", params={"query": "rollback"}, timeout=60)
            assert r.status_code == 503 and r.json()["error"]["code"] == "unavailable"
            assert key not in r.text and "\n" not in r.json()["error"]["message"]
            assert httpx.get(f"{server.url}/v1/health", timeout=60).status_code == 200  # the store still answers
        finally:
            server.stop()
            wb.store.drop()
            wb.close()

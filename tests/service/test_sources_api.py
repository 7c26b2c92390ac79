"""`/v1/kbs/{kb}/sources` on a real uvicorn (issue 38): the same sources, syncs and JSON as `sources ... --json`, each
action under its role, a folder of the server's own files added only by the server's operator."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from rag_core.access.memory import MemoryAccessStore
from rag_core.access.records import Role
from rag_core.bootstrap import Workbench
from rag_core.service.app import create_app
from tests.helpers import make_workbench
from tests.service import live

TOKEN = "tok-SECRET-sources-9b2d"


@pytest.fixture(scope="module")
def wb(tmp_path_factory: pytest.TempPathFactory, local_embedder, milvus) -> Iterator[Workbench]:
    wb = make_workbench(tmp_path_factory.mktemp("sources-kb"), local_embedder)
    yield wb
    wb.close()


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runbooks")
    for name, text in (("disk.md", "# Disk\n\nPrune docker images to free disk space.\n"),
                       ("cpu.md", "# CPU\n\nRoll back the deploy when CPU stays high.\n"),
                       ("net.md", "# Network\n\nCheck the load balancer health first.\n"),
                       ("dns.md", "# DNS\n\nFlush the resolver cache on the node.\n")):
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def people(wb: Workbench) -> tuple[MemoryAccessStore, dict[str, str]]:
    store, kb = MemoryAccessStore(), wb.settings.kb_name
    roles = {"reader": Role.READER, "editor": Role.EDITOR, "admin": Role.ADMIN}
    return store, {name: store.create_user(name, {kb: role})[1] for name, role in roles.items()}


@pytest.fixture(scope="module")
def server(wb: Workbench, people: tuple[MemoryAccessStore, dict[str, str]]) -> Iterator[live.LiveServer]:
    server = live.start(create_app(wb, token=TOKEN, env={}, close_workbench=False, access=people[0]))
    yield server
    server.stop()


def message(response: httpx.Response) -> str:
    body = response.json()
    return body["message"] if "message" in body else body["error"]["message"]


def call(server: live.LiveServer, method: str, path: str, token: str, **kwargs) -> httpx.Response:
    return httpx.request(method, server.url + path, headers={"Authorization": f"Bearer {token}"}, timeout=120,
                         **kwargs)


def test_add_sync_list_show_and_remove_a_folder_source(server, wb, folder, people) -> None:
    _, tokens = people
    base = f"/v1/kbs/{wb.settings.kb_name}/sources"
    body = {"type": "folder", "location": str(folder), "name": "runbooks", "every": 30}
    refused = call(server, "POST", base, tokens["admin"], json=body)  # this knowledge base's admin only
    assert refused.status_code == 403 and "admin role on knowledge base '*'" in message(refused)
    for local in ({"type": "git", "location": f"file://{folder}"}, {"type": "git", "location": str(folder)},
                  {"type": "notion-export", "location": str(folder / "export.zip")},
                  {"type": "confluence", "location": "https://attacker.example/wiki", "options": {"space": "OPS"}}):
        assert call(server, "POST", base, tokens["admin"], json=local).status_code == 403, local
    made = call(server, "POST", base, TOKEN, json=body)  # the server's operator
    assert made.status_code == 201 and (made.json()["documents"], made.json()["every"]) == (0, 30)

    assert call(server, "POST", f"{base}/runbooks/sync", tokens["reader"]).status_code == 403
    first = call(server, "POST", f"{base}/runbooks/sync", tokens["editor"]).json()
    assert (first["added"], first["replaced"], first["unchanged"], first["deleted"]) == (4, 0, 0, 0)
    again = call(server, "POST", f"{base}/runbooks/sync", tokens["editor"]).json()
    assert (again["added"], again["unchanged"]) == (0, 4)

    (folder / "dns.md").unlink()
    dry = call(server, "POST", f"{base}/runbooks/sync", tokens["editor"], params={"dry_run": True}).json()
    assert dry["dry_run"] and dry["changes"]["deleted"] == ["runbooks/dns.md"]
    assert {d.doc_id for d in wb.store.list_documents()} >= {"runbooks/dns.md"}  # a dry run changes nothing
    synced = call(server, "POST", f"{base}/runbooks/sync", tokens["editor"]).json()
    assert synced["deleted"] == 1 and "runbooks/dns.md" not in {d.doc_id for d in wb.store.list_documents()}

    listed = call(server, "GET", base, tokens["reader"]).json()
    assert [s["name"] for s in listed] == ["runbooks"] and listed[0]["status"]["deleted"] == 1
    shown = call(server, "GET", f"{base}/runbooks", tokens["reader"])
    assert shown.status_code == 200 and shown.json()["documents"] == 3
    missing = call(server, "GET", f"{base}/nope", tokens["reader"])
    assert missing.status_code == 404 and "unknown source 'nope'" in message(missing)

    assert call(server, "PATCH", f"{base}/runbooks", tokens["editor"], json={"every": 5}).status_code == 403
    changed = call(server, "PATCH", f"{base}/runbooks", tokens["admin"], json={"every": 0})
    assert changed.status_code == 200 and changed.json()["every"] == 0
    assert call(server, "PATCH", f"{base}/runbooks", tokens["admin"], json={"every": -1}).status_code == 400

    assert call(server, "DELETE", f"{base}/runbooks", tokens["editor"]).status_code == 403
    removed = call(server, "DELETE", f"{base}/runbooks", tokens["admin"], params={"delete_documents": True}).json()
    assert removed == {"removed": "runbooks", "documents_deleted": 3}
    assert call(server, "GET", base, tokens["reader"]).json() == []


def test_a_sync_that_would_delete_too_much_is_refused_in_one_line(server, wb, tmp_path, people) -> None:
    _, tokens = people
    base = f"/v1/kbs/{wb.settings.kb_name}/sources"
    for name in ("a.md", "b.md"):
        (tmp_path / name).write_text(f"# {name}\n\nSome text about {name}.\n", encoding="utf-8")
    assert call(server, "POST", base, TOKEN, json={"type": "folder", "location": str(tmp_path),
                                                   "name": "guarded"}).status_code == 201
    assert call(server, "POST", f"{base}/guarded/sync", tokens["editor"]).json()["added"] == 2
    (tmp_path / "a.md").unlink()
    refused = call(server, "POST", f"{base}/guarded/sync", tokens["editor"])
    assert refused.status_code == 400 and "sources.max-delete-share" in message(refused)
    assert "\n" not in message(refused)
    allowed = call(server, "POST", f"{base}/guarded/sync", tokens["editor"], params={"allow_deletes": True})
    assert allowed.json()["deleted"] == 1
    call(server, "DELETE", f"{base}/guarded", TOKEN, params={"delete_documents": True})

"""Token, bind address, CORS, and the `serve` command as a person runs it (a real process, real signals)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from rag_core import cli
from rag_core.errors import ConfigError
from rag_core.service.security import check_bind, is_loopback
from tests.helpers import REPO
from tests.service import live
from tests.service.conftest import serve

TOKEN = "tok-SECRET-3b8e0f6a91"


@pytest.fixture(scope="module")
def guarded(kb) -> Iterator[live.LiveServer]:
    server = serve(kb, token=TOKEN, api__cors_origins="http://app.example.test, http://localhost:5173")
    yield server
    server.stop()


@pytest.mark.parametrize(("method", "path", "shape"), [
    ("GET", "/v1/search?query=cpu", "v1"), ("GET", "/v1/documents", "v1"), ("DELETE", "/v1/documents/a.md", "v1"),
    ("POST", "/api/chat", "api"), ("POST", "/api/chat_stream", "api"), ("POST", "/api/upload", "api"),
    ("POST", "/api/ai_ops", "api"), ("GET", "/api/chat/session/x", "api"), ("GET", "/v1/no-such-route", "v1"),
])
def test_every_route_needs_the_token(guarded: live.LiveServer, method: str, path: str, shape: str):
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        r = httpx.request(method, guarded.url + path, headers=headers, json={"Question": "x"} if method == "POST" else None)
        assert r.status_code == 401, (path, headers)
        assert r.headers["www-authenticate"] == "Bearer"
        body = r.json()
        message = body["message"] if shape == "api" else body["error"]["message"]
        assert "Authorization: Bearer" in message and TOKEN not in r.text
        if shape == "api":
            assert body["code"] == 401


def test_the_right_token_opens_every_route(guarded: live.LiveServer):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert httpx.get(f"{guarded.url}/v1/search", params={"query": "cpu"}, headers=auth).status_code == 200
    r = httpx.post(f"{guarded.url}/api/chat", json={"Question": "disk full"}, headers=auth)
    assert r.status_code == 200 and r.json()["data"]["success"] is True and TOKEN not in r.text


def test_health_and_the_openapi_pages_need_no_token(guarded: live.LiveServer):
    health = httpx.get(f"{guarded.url}/v1/health")
    assert health.status_code == 200 and health.json()["auth"] is True and TOKEN not in health.text
    schema = httpx.get(f"{guarded.url}/openapi.json")
    assert schema.status_code == 200 and schema.json()["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert httpx.get(f"{guarded.url}/docs").status_code == 200
    assert httpx.get(f"{guarded.url}/docs/static/swagger-ui-bundle.js").status_code == 200
    assert httpx.get(f"{guarded.url}/v1/documents").status_code == 401  # the exemption is only the docs'


def test_cors_allows_only_the_configured_origins(guarded: live.LiveServer, offline_server: live.LiveServer):
    preflight = {"Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "authorization,content-type"}
    ok = httpx.options(f"{guarded.url}/api/chat_stream", headers={"Origin": "http://localhost:5173", **preflight})
    assert ok.status_code == 200 and ok.headers["access-control-allow-origin"] == "http://localhost:5173"
    assert "authorization" in ok.headers["access-control-allow-headers"].lower()
    denied = httpx.options(f"{guarded.url}/api/chat_stream", headers={"Origin": "http://evil.test", **preflight})
    assert "access-control-allow-origin" not in denied.headers
    # a 401 still carries the header, so a browser page can read why
    r = httpx.get(f"{guarded.url}/v1/documents", headers={"Origin": "http://app.example.test"})
    assert r.status_code == 401 and r.headers["access-control-allow-origin"] == "http://app.example.test"
    # none by default
    r = httpx.get(f"{offline_server.url}/v1/health", headers={"Origin": "http://app.example.test"})
    assert "access-control-allow-origin" not in r.headers


def test_bind_rules():
    for host in ("127.0.0.1", "::1", "localhost", "127.0.0.5"):
        assert is_loopback(host), host
        check_bind(host, "", False)
    for host in ("0.0.0.0", "::", "192.0.2.10"):
        assert not is_loopback(host), host
        with pytest.raises(ConfigError, match="RAG_API_TOKEN"):
            check_bind(host, "", False)
        check_bind(host, TOKEN, False)
        check_bind(host, "", True)


def test_serve_refuses_a_public_bind_without_a_token_in_one_line(capsys, tmp_path: Path):
    assert cli.main(["--data-dir", str(tmp_path), "serve", "--host", "0.0.0.0", "--port", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: Refusing to serve on 0.0.0.0 without a token") and "\n" not in err
    assert not (tmp_path / "milvus.db").exists()  # refused before opening anything


def test_serve_reports_a_busy_port_in_one_line(capsys, tmp_path: Path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert cli.main(["--data-dir", str(tmp_path), "serve", "--port", str(port)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: Port {port} on 127.0.0.1 is already in use: stop what holds it or pick another with --port."


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAG_", "DASHSCOPE", "OPENAI", "MILVUS"))}
    env.update(PYTHONUNBUFFERED="1", **extra)
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_on_a_locked_knowledge_base_is_one_clear_line(kb):
    # this test process holds the knowledge base open (the session's workbench)
    proc = subprocess.run([sys.executable, "-m", "rag_core", "--data-dir", str(kb.settings.data_dir), "serve",
                           "--port", str(free_port())], cwd=REPO, env=child_env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    err = proc.stderr.strip()
    assert err.startswith("error: The knowledge base") and "already open in pid" in err and "Traceback" not in err
    assert len(err.splitlines()) == 1


def test_serve_runs_answers_and_releases_the_knowledge_base_on_ctrl_c(tmp_path: Path):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "rag_core", "--data-dir", str(tmp_path), "serve", "--port", str(port)],
                            cwd=REPO, env=child_env(RAG_API_TOKEN=TOKEN), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            try:
                if httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "serve did not answer"
            time.sleep(0.2)
        auth = {"Authorization": f"Bearer {TOKEN}"}
        files = {"files": ("note.md", b"# Note\n\nThe rollback window is 30 minutes.")}
        assert httpx.post(f"http://127.0.0.1:{port}/v1/documents", files=files, headers=auth).status_code == 200
        r = httpx.get(f"http://127.0.0.1:{port}/v1/search", params={"query": "rollback window"}, headers=auth)
        assert r.json()["evidence"][0]["doc_id"] == "note.md"
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, output
    assert f"RAG workbench API on http://127.0.0.1:{port}" in output and "token required" in output
    assert TOKEN not in output and "Traceback" not in output
    # serve let go of the knowledge base: another process (this one) can use it now (through the store
    # host that serve started, which keeps the file for milvus.host-idle seconds: shared mode)
    from tests.helpers import make_workbench

    wb = make_workbench(tmp_path, **{"milvus.lite-mode": "shared"})
    try:
        assert [d.doc_id for d in wb.store.list_documents()] == ["note.md"]
    finally:
        wb.close()

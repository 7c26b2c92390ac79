"""Token, bind address, CORS, Host and Origin checks, and the `serve` command as a person runs it (a real process,
real signals)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from rag_core import cli
from rag_core.errors import ConfigError
from rag_core.service.security import MIN_TOKEN_CHARS, allowed_hosts, check_bind, check_token, is_loopback
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
        r = httpx.request(
            method, guarded.url + path, headers=headers, json={"Question": "x"} if method == "POST" else None,
            timeout=60,
        )
        assert r.status_code == 401, (path, headers)
        assert r.headers["www-authenticate"] == "Bearer"
        body = r.json()
        message = body["message"] if shape == "api" else body["error"]["message"]
        assert "Authorization: Bearer" in message and TOKEN not in r.text
        if shape == "api":
            assert body["code"] == 401


def test_the_right_token_opens_every_route(guarded: live.LiveServer):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert httpx.get(f"{guarded.url}/v1/search", params={"query": "cpu"}, headers=auth, timeout=60).status_code == 200
    r = httpx.post(f"{guarded.url}/api/chat", json={"Question": "disk full"}, headers=auth, timeout=60)
    assert r.status_code == 200 and r.json()["data"]["success"] is True and TOKEN not in r.text


@pytest.mark.parametrize("header", [f"bearer {TOKEN}", f"BEARER {TOKEN}", f"Bearer  {TOKEN}"])
def test_the_scheme_is_case_insensitive(guarded: live.LiveServer, header: str):
    assert httpx.get(f"{guarded.url}/v1/documents", headers={"Authorization": header}, timeout=60).status_code == 200


@pytest.mark.parametrize("header", [f"Basic {TOKEN}", f"bearer {TOKEN}x", f"bearer {TOKEN[:-1]}", "bearer",
                                    f"Bearer{TOKEN}"])
def test_other_schemes_and_tokens_are_refused(guarded: live.LiveServer, header: str):
    assert httpx.get(f"{guarded.url}/v1/documents", headers={"Authorization": header}, timeout=60).status_code == 401


def test_a_short_token_stops_serve_in_one_line(capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    short = "Zq9-short-tok"
    monkeypatch.setenv("RAG_API_TOKEN", short)
    with socket.socket() as busy:  # were the token accepted, serve would stop at the port, not run
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        assert cli.main(["--data-dir", str(tmp_path), "serve", "--port", str(busy.getsockname()[1])]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: RAG_API_TOKEN has {len(short)} characters; use at least {MIN_TOKEN_CHARS}")
    assert "\n" not in err and short not in err
    assert not (tmp_path / "milvus.db").exists()  # refused before opening anything
    check_token("x" * MIN_TOKEN_CHARS)
    check_token("")  # no token: no auth (loopback)


def test_health_and_the_openapi_pages_need_no_token(guarded: live.LiveServer):
    health = httpx.get(f"{guarded.url}/v1/health", timeout=60)
    assert health.status_code == 200 and health.json()["auth"] is True and TOKEN not in health.text
    schema = httpx.get(f"{guarded.url}/openapi.json", timeout=60)
    assert schema.status_code == 200 and schema.json()["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert httpx.get(f"{guarded.url}/docs", timeout=60).status_code == 200
    assert httpx.get(f"{guarded.url}/docs/static/swagger-ui-bundle.js", timeout=60).status_code == 200
    assert httpx.get(f"{guarded.url}/v1/documents", timeout=60).status_code == 401  # the exemption is only the docs'


def test_cors_allows_only_the_configured_origins(guarded: live.LiveServer, offline_server: live.LiveServer):
    preflight = {"Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "authorization,content-type"}
    ok = httpx.options(f"{guarded.url}/api/chat_stream", headers={"Origin": "http://localhost:5173", **preflight},
                       timeout=60)
    assert ok.status_code == 200 and ok.headers["access-control-allow-origin"] == "http://localhost:5173"
    assert "authorization" in ok.headers["access-control-allow-headers"].lower()
    denied = httpx.options(f"{guarded.url}/api/chat_stream", headers={"Origin": "http://evil.test", **preflight},
                           timeout=60)
    assert "access-control-allow-origin" not in denied.headers
    # a 401 still carries the header, so a browser page can read why
    r = httpx.get(f"{guarded.url}/v1/documents", headers={"Origin": "http://app.example.test"}, timeout=60)
    assert r.status_code == 401 and r.headers["access-control-allow-origin"] == "http://app.example.test"
    # none by default
    r = httpx.get(f"{offline_server.url}/v1/health", headers={"Origin": "http://app.example.test"}, timeout=60)
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


@pytest.mark.milvus
def test_serve_runs_answers_and_releases_the_knowledge_base_on_ctrl_c(tmp_path: Path):
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rag_core", "--data-dir", str(tmp_path), "serve", "--port", str(port)],
        cwd=REPO,
        env=child_env(RAG_API_TOKEN=TOKEN),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
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
        assert httpx.post(f"http://127.0.0.1:{port}/v1/documents", files=files, headers=auth,
                          timeout=60).status_code == 200
        r = httpx.get(f"http://127.0.0.1:{port}/v1/search", params={"query": "rollback window"}, headers=auth,
                      timeout=60)
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


# ------------------------------------------------------------------------ Host and Origin (cross-site requests)
NOTE = ("note.md", b"# Note\n\nCross-site uploads must be refused.", "text/markdown")


def documents(server: live.LiveServer) -> list[str]:
    return [d["doc_id"] for d in httpx.get(f"{server.url}/v1/documents", timeout=60).json()]


def refused(r: httpx.Response, code: str, *words: str) -> None:
    assert r.status_code == 403, r.text
    body = r.json()
    message = body["message"] if "message" in body else body["error"]["message"]
    assert "\n" not in message and all(w in message for w in words), message
    if "error" in body:
        assert body["error"]["code"] == code
    else:
        assert body["code"] == 403


@pytest.mark.parametrize("headers", [
    {"Origin": "http://evil.test"},
    {"Origin": "https://evil.test:8443"},
    {"Referer": "http://evil.test/page.html"},  # no Origin: the Referer says where the request comes from
    {"Origin": "null"},  # a sandboxed frame, a page opened from a file
    {"Origin": "http://127.0.0.1:5173"},  # another local port (a dev server) is another origin
])
def test_a_cross_site_upload_is_refused_and_adds_nothing(offline_server: live.LiveServer, headers: dict[str, str]):
    before = documents(offline_server)
    r = httpx.post(f"{offline_server.url}/api/upload", files={"file": NOTE}, data={"folder": "xsite"}, headers=headers,
                   timeout=60)
    refused(r, "origin_not_allowed", "api.cors-origins")
    assert ("Origin: null" in r.json()["message"]) == (headers.get("Origin") == "null")
    assert documents(offline_server) == before
    for method, path in (("DELETE", "/v1/documents/runbooks/cpu_high.md"), ("POST", "/api/chat"),
                         ("POST", "/api/chat_stream"), ("POST", "/v1/documents")):
        refused(httpx.request(method, offline_server.url + path, json={"Question": "x"}, headers=headers, timeout=60),
                "origin_not_allowed", "api.cors-origins")
    assert documents(offline_server) == before


def test_reads_from_another_origin_pass(offline_server: live.LiveServer):
    # the browser does not let the page read the answer (no CORS header); refusing would break nothing either
    r = httpx.get(f"{offline_server.url}/v1/search", params={"query": "cpu"}, headers={"Origin": "http://evil.test"},
                  timeout=60)
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers


def test_the_servers_own_pages_curl_and_sdks_may_change_things(offline_server: live.LiveServer):
    port = offline_server.url.rsplit(":", 1)[1]
    own = [{"Origin": offline_server.url}, {"Referer": f"{offline_server.url}/docs"},
           {"Origin": f"http://localhost:{port}", "Host": f"localhost:{port}"}, {}]
    for headers in own:
        r = httpx.post(f"{offline_server.url}/api/upload", files={"file": NOTE}, data={"folder": "own"},
                       headers=headers, timeout=60)
        assert r.status_code == 200, (headers, r.text)
    assert httpx.delete(f"{offline_server.url}/v1/documents/own/note.md", timeout=60).status_code == 200
    # curl and the requests package send no Origin
    chat = subprocess.run(["curl", "-s", f"{offline_server.url}/api/chat", "-H", "Content-Type: application/json",
                           "-d", '{"Question": "disk full"}'], capture_output=True, text=True, timeout=60)
    assert '"success":true' in chat.stdout, chat.stdout
    import requests

    r = requests.post(f"{offline_server.url}/api/chat", json={"Question": "disk full"}, timeout=60)
    assert r.status_code == 200 and r.json()["data"]["success"] is True


def test_a_configured_origin_may_change_things_with_the_token(guarded: live.LiveServer):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    r = httpx.post(f"{guarded.url}/api/chat", json={"Question": "disk full"},
                   headers={"Origin": "http://app.example.test", **auth}, timeout=60)
    assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "http://app.example.test"
    evil = httpx.post(f"{guarded.url}/api/chat", json={"Question": "x"}, headers={"Origin": "http://evil.test", **auth},
                      timeout=60)
    refused(evil, "origin_not_allowed", "api.cors-origins")


@pytest.mark.parametrize("host", ["evil.test", "evil.test:{port}", "127.0.0.1.nip.io:{port}", "localhost.evil.test"])
def test_a_host_the_server_is_not_is_refused(offline_server: live.LiveServer, host: str):
    port = offline_server.url.rsplit(":", 1)[1]
    host = host.format(port=port)
    refused(httpx.get(f"{offline_server.url}/v1/health", headers={"Host": host}, timeout=60), "host_not_allowed",
            "api.allowed-hosts", "DNS rebinding")
    # DNS rebinding: the page's own origin, under the attacker's name
    before = documents(offline_server)
    refused(httpx.post(f"{offline_server.url}/api/upload", files={"file": NOTE},
                       headers={"Host": host, "Origin": f"http://{host}"},
                       timeout=60), "host_not_allowed", "api.allowed-hosts")
    assert documents(offline_server) == before


def test_loopback_names_and_configured_hosts_are_answered(kb, offline_server: live.LiveServer):
    port = offline_server.url.rsplit(":", 1)[1]
    for host in ("127.0.0.1", f"127.0.0.1:{port}", f"localhost:{port}", "LOCALHOST", f"[::1]:{port}", "localhost."):
        assert httpx.get(f"{offline_server.url}/v1/health", headers={"Host": host}, timeout=60).status_code == 200, host
    named = serve(kb, api__allowed_hosts="kb.example.test, Wiki.Example.Test:8000")
    try:
        for host in ("kb.example.test", f"kb.example.test:{port}", "wiki.example.test"):
            assert httpx.get(f"{named.url}/v1/health", headers={"Host": host}, timeout=60).status_code == 200, host
        r = httpx.post(f"{named.url}/api/chat", json={"Question": "disk"},
                       headers={"Host": "kb.example.test", "Origin": "http://kb.example.test"}, timeout=60)
        assert r.status_code == 200  # its own origin under the configured name
        assert httpx.get(f"{named.url}/v1/health", headers={"Host": "other.example.test"},
                         timeout=60).status_code == 403
    finally:
        named.stop()


def test_host_rules_by_bound_address():
    loopback = allowed_hosts("127.0.0.1", "")
    assert all(loopback.allow(h) for h in ("127.0.0.1", "localhost", "::1", "127.0.0.2"))
    assert not any(loopback.allow(h) for h in ("192.0.2.10", "evil.test", "example.com"))
    public = allowed_hosts("192.0.2.10", "")
    assert public.allow("192.0.2.10") and public.allow("localhost") and not public.allow("198.51.100.7")
    # a wildcard: requests arrive on any of the machine's addresses; names still need api.allowed-hosts
    for wildcard in ("0.0.0.0", "::", "[::]"):
        hosts = allowed_hosts(wildcard, "kb.lan")
        assert all(hosts.allow(h) for h in ("192.0.2.10", "10.1.2.3", "2001:db8::1", "kb.lan", "localhost"))
        assert not hosts.allow("evil.test")
    assert allowed_hosts("127.0.0.1", "*").allow("anything.example")

"""Roles on every route (issue 37), on a real uvicorn: a table walked from the app's own routes, so a new route that
declares no role (deps.Needs) fails here; who is calling (a user's token, RAG_API_TOKEN, a trusted proxy's header,
nobody in the one-person setup); revocation at once; listings and the MCP tools showing only what the caller may
read; the audit log; chat sessions per user."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from fastapi.routing import APIRoute, iter_route_contexts
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from rag_core.access.memory import MemoryAccessStore
from rag_core.access.records import Role
from rag_core.bootstrap import Workbench
from rag_core.service.app import create_app
from rag_core.service.deps import Needs, needs_of
from tests.helpers import make_workbench
from tests.service import live
from tests.service.conftest import with_settings

TOKEN = "tok-SECRET-roles-5e1a7c"
OPEN = {"/v1/health", "/docs"}  # no role: the health check and the OpenAPI page (OPEN_PATHS)
DOC = "notes/alpha.md"
SECRET_KB = "secret_kb"


@pytest.fixture(scope="module")
def wb(tmp_path_factory: pytest.TempPathFactory, local_embedder, milvus) -> Iterator[Workbench]:
    wb = make_workbench(tmp_path_factory.mktemp("roles-kb"), local_embedder)
    reports = wb.ingestor.ingest_uploads([(DOC, b"# Alpha\n\nThe alpha service restarts itself at night.\n")])
    assert reports[0].status == "added"
    yield wb
    wb.close()


@pytest.fixture(scope="module")
def store(wb: Workbench) -> MemoryAccessStore:
    return MemoryAccessStore()


@pytest.fixture(scope="module")
def tokens(store: MemoryAccessStore, wb: Workbench) -> dict[str, str]:
    kb = wb.settings.kb_name
    people = {"reader": {kb: Role.READER}, "editor": {kb: Role.EDITOR}, "admin": {kb: Role.ADMIN},
              "stranger": {"elsewhere": Role.ADMIN}, "secret": {SECRET_KB: Role.READER, kb: Role.READER},
              "other": {SECRET_KB: Role.READER}, "future": {"future_kb": Role.ADMIN}}
    return {name: store.create_user(name, roles)[1] for name, roles in people.items()}


def start(wb: Workbench, store: MemoryAccessStore, token: str = "", **settings: Any) -> live.LiveServer:
    overrides = {k.replace("__", ".").replace("_", "-"): v for k, v in settings.items()}
    changed = with_settings(wb, overrides) if overrides else wb
    return live.start(create_app(changed, token=token, env={}, close_workbench=False, access=store))


@pytest.fixture(scope="module")
def server(wb: Workbench, store: MemoryAccessStore, tokens: dict[str, str]) -> Iterator[live.LiveServer]:
    server = start(wb, store, TOKEN)
    # A second knowledge base only "secret" (and RAG_API_TOKEN) may read.
    made = httpx.post(f"{server.url}/v1/kbs", json={"name": SECRET_KB}, headers=bearer(TOKEN), timeout=60)
    assert made.status_code == 201, made.text
    yield server
    server.stop()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def message(response: httpx.Response) -> str:
    body = response.json()
    return body["message"] if "message" in body else body["error"]["message"]


# ------------------------------------------------------------------------------------------- the table of routes
def api_routes(app: Any) -> list[tuple[str, str, list[Needs]]]:
    """(method, path, the Needs it declares) of every route of the app, its routers' included."""
    return [(method, context.path, needs_of(context.original_route.dependant))
            for context in iter_route_contexts(app.routes) if isinstance(context.original_route, APIRoute)
            for method in sorted((context.methods or set()) - {"HEAD"})]


def test_every_route_declares_a_role(server: live.LiveServer):
    others = {c.path for c in iter_route_contexts(server.app.routes) if not isinstance(c.original_route, APIRoute)}
    # Not FastAPI routes: the schema and Swagger's files (no data), and /mcp, whose tools check roles themselves.
    assert others == {"/openapi.json", "/docs/static", "/mcp"}, others
    undeclared = [f"{m} {p}" for m, p, needs in api_routes(server.app) if not needs and p not in OPEN]
    assert not undeclared, f"routes without a role (deps.Needs): {undeclared}"
    assert all(not needs for _, p, needs in api_routes(server.app) if p in OPEN)
    roles = {(m, p): {n.role for n in needs} for m, p, needs in api_routes(server.app)}
    # A few the issue names, so a change of their role is a decision, not an accident.
    assert roles[("GET", "/v1/search")] == {Role.READER}
    assert roles[("POST", "/v1/documents")] == {Role.EDITOR}
    assert roles[("DELETE", "/v1/kbs/{kb}/documents/{doc_id:path}")] == {Role.EDITOR}
    assert roles[("POST", "/v1/kbs")] == {Role.ADMIN}
    assert roles[("DELETE", "/v1/kbs/{kb}")] == {Role.ADMIN}
    assert roles[("POST", "/v1/chat/completions")] == {Role.READER}
    assert roles[("POST", "/api/upload")] == {Role.EDITOR}
    assert roles[("GET", "/v1/kbs")] == {None}  # any caller: the list shows what they may read
    assert roles[("POST", "/v1/kbs/{kb}/sources")] == {Role.ADMIN}
    assert roles[("POST", "/v1/kbs/{kb}/sources/{name}/sync")] == {Role.EDITOR}
    assert roles[("PUT", "/v1/kbs/{kb}/bm25")] == roles[("POST", "/v1/kbs/{kb}/upgrade")] == {Role.ADMIN}
    assert roles[("GET", "/v1/kbs/{kb}/bm25")] == roles[("GET", "/v1/kbs/{kb}/bm25/suggest")] == {Role.READER}


def concrete(path: str, kb: str) -> str:
    return (path.replace("{kb}", kb).replace("{model}", kb).replace("{doc_id:path}", "no/such-doc.md")
            .replace("{chunk_index}", "0").replace("{session_id}", "x").replace("{name}", "no-such-source"))


def call(server: live.LiveServer, method: str, path: str, headers: dict[str, str]) -> httpx.Response:
    body = {"name": "made_by_test"} if path.endswith("/kbs") or path.endswith("/copy") else {}
    return httpx.request(method, server.url + path, headers=headers, timeout=60,
                         json=body if method in ("POST", "PATCH") else None)


def test_each_route_answers_each_role_as_declared(server: live.LiveServer, tokens: dict[str, str], wb: Workbench):
    kb = wb.settings.kb_name
    hidden = {}
    for method, template, needs in api_routes(server.app):
        if template in OPEN:
            continue
        path = concrete(template, kb)
        anonymous = call(server, method, path, {})
        assert anonymous.status_code == 401, (method, path)
        assert anonymous.headers["www-authenticate"] == "Bearer"
        role = max((n.role for n in needs if n.role is not None), key=lambda r: r.rank, default=None)
        if role is None:
            continue
        creates = any(n.new for n in needs)
        for user in ("stranger", "reader", "editor", "admin"):
            held = {"stranger": None, "reader": Role.READER, "editor": Role.EDITOR, "admin": Role.ADMIN}[user]
            r = call(server, method, path, bearer(tokens[user])) if held is not None and held.covers(role) and \
                method == "GET" else None
            if r is not None:  # allowed: answered (a missing document is a 404 of its own, not the role's)
                assert r.status_code not in (401, 403), (user, method, path, r.text)
                assert not message(r).startswith(f"There is no knowledge base {kb!r}") if r.status_code >= 400 \
                    else True
                continue
            if held is not None and held.covers(role):
                continue  # allowed, and it would change something: the allowed writes are tested below
            r = call(server, method, path, bearer(tokens[user]))
            if held is None and not creates:  # cannot read it: answered as a knowledge base that does not exist
                assert r.status_code == 404, (user, method, path, r.text)
                assert message(r).startswith(f"There is no knowledge base {kb!r}"), message(r)
                hidden[(method, template)] = message(r)
            else:
                assert r.status_code == 403, (user, method, path, r.text)
                text = message(r)
                assert f"needs the {role.value} role on knowledge base" in text, text
                # A new knowledge base's name: nobody but an admin of it (or of `*`) holds a role there.
                assert "you have no role there" in text if creates or held is None else f"you are a {held.value}" \
                    in text, text
                if template.startswith("/v1/kbs/{kb}") or "documents" in template:
                    assert repr(kb) in text
    assert hidden  # the stranger met hidden knowledge bases


def test_a_hidden_knowledge_base_answers_as_an_unknown_one(server: live.LiveServer, tokens: dict[str, str]):
    """Same status, same words (the name aside), and neither names the other knowledge bases."""
    def answer(kb: str) -> httpx.Response:
        return httpx.get(f"{server.url}/v1/kbs/{kb}/documents", headers=bearer(tokens["reader"]), timeout=60)

    hidden, unknown = answer(SECRET_KB), answer("no_such_kb")
    assert hidden.status_code == unknown.status_code == 404
    assert message(hidden).replace(SECRET_KB, "X") == message(unknown).replace("no_such_kb", "X")
    assert SECRET_KB not in message(unknown)
    models = httpx.get(f"{server.url}/v1/models/{SECRET_KB}", headers=bearer(tokens["reader"]), timeout=60)
    assert models.status_code == 404 and models.json()["error"]["code"] == "model_not_found"
    chat = httpx.post(f"{server.url}/v1/chat/completions", headers=bearer(tokens["reader"]), timeout=60,
                      json={"model": SECRET_KB, "messages": [{"role": "user", "content": "hi"}]})
    assert chat.status_code == 404 and chat.json()["error"]["code"] == "model_not_found"
    assert httpx.get(f"{server.url}/v1/kbs/{SECRET_KB}/documents", headers=bearer(tokens["secret"]),
                     timeout=60).status_code == 200
    # A role on a name not made yet: its 404 names none of the knowledge bases hidden from the caller.
    for method, path in (("GET", "/v1/kbs/future_kb"), ("GET", "/v1/kbs/future_kb/documents"),
                         ("DELETE", "/v1/kbs/future_kb"), ("PATCH", "/v1/kbs/future_kb")):
        r = httpx.request(method, server.url + path, headers=bearer(tokens["future"]), timeout=60,
                          json={"settings": {}} if method == "PATCH" else None)
        assert r.status_code == 404 and SECRET_KB not in r.text, (method, path, r.text)
        assert message(r) == "There is no knowledge base 'future_kb'; you can read none."


def test_listings_show_only_what_the_caller_may_read(server: live.LiveServer, tokens: dict[str, str],
                                                     wb: Workbench):
    kb = wb.settings.kb_name

    def names(token: str) -> tuple[list[str], list[str]]:
        kbs = httpx.get(f"{server.url}/v1/kbs", headers=bearer(token), timeout=60).json()
        models = httpx.get(f"{server.url}/v1/models", headers=bearer(token), timeout=60).json()["data"]
        return sorted(k["name"] for k in kbs), sorted(m["id"] for m in models)

    assert names(tokens["reader"]) == ([kb], [kb])
    assert names(tokens["stranger"]) == ([], [])
    assert names(tokens["secret"]) == (sorted([kb, SECRET_KB]),) * 2
    assert names(TOKEN) == (sorted([kb, SECRET_KB]),) * 2  # RAG_API_TOKEN: an admin of everything


async def mcp_calls(url: str, token: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async with httpx2.AsyncClient(headers=bearer(token), timeout=60) as http, \
            Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
        return [await client.call_tool(name, arguments) for name, arguments in calls]


def test_mcp_tools_run_as_the_caller(server: live.LiveServer, tokens: dict[str, str], wb: Workbench):
    kb = wb.settings.kb_name
    calls = [("list_knowledge_bases", {}), ("list_documents", {"kb": SECRET_KB}),
             ("list_documents", {"kb": "no_such_kb"}), ("search", {"query": "alpha", "kb": SECRET_KB}),
             ("list_documents", {})]
    listed, hidden, unknown, search, docs = live.run_async(mcp_calls(server.url, tokens["reader"], calls))
    assert [k["name"] for k in listed.structured_content["items"]] == [kb]
    assert hidden.is_error and unknown.is_error and search.is_error
    assert hidden.content[0].text.replace(SECRET_KB, "X") == unknown.content[0].text.replace("no_such_kb", "X")
    assert SECRET_KB not in unknown.content[0].text
    assert not docs.is_error and [d["doc_id"] for d in docs.structured_content["items"]] == [DOC]
    listed, hidden = live.run_async(mcp_calls(server.url, tokens["secret"], calls[:2]))
    assert sorted(k["name"] for k in listed.structured_content["items"]) == sorted([kb, SECRET_KB])
    assert not hidden.is_error
    (stranger,) = live.run_async(mcp_calls(server.url, tokens["stranger"], calls[:1]))
    assert stranger.structured_content["items"] == []
    anonymous = httpx.post(f"{server.url}/mcp", headers={"Accept": "application/json, text/event-stream"},
                           json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=60)
    assert anonymous.status_code == 401


# ------------------------------------------------------------------------------------------------ who is calling
def test_a_revoked_token_stops_at_once(server: live.LiveServer, store: MemoryAccessStore):
    _, token = store.create_user("leaving", {"*": Role.READER})
    assert httpx.get(f"{server.url}/v1/documents", headers=bearer(token), timeout=60).status_code == 200
    store.revoke("leaving")
    r = httpx.get(f"{server.url}/v1/documents", headers=bearer(token), timeout=60)
    assert r.status_code == 401 and "revoked" in message(r) and token not in r.text


def test_rag_api_token_is_an_admin_of_everything_and_wrong_tokens_are_401(server: live.LiveServer):
    assert httpx.get(f"{server.url}/v1/kbs/{SECRET_KB}/documents", headers=bearer(TOKEN), timeout=60).status_code \
        == 200
    for headers in ({"Authorization": "Bearer rwb_not-a-real-token"}, {"Authorization": TOKEN}, {}):
        r = httpx.get(f"{server.url}/v1/documents", headers=headers, timeout=60)
        assert r.status_code == 401 and "Authorization: Bearer" in message(r) and TOKEN not in r.text


def test_users_alone_make_the_server_ask_for_tokens(wb: Workbench, store: MemoryAccessStore,
                                                   tokens: dict[str, str]):
    server = start(wb, store)  # no RAG_API_TOKEN, but users
    try:
        assert httpx.get(f"{server.url}/v1/health", timeout=60).json()["auth"] is True
        assert httpx.get(f"{server.url}/v1/documents", timeout=60).status_code == 401
        assert httpx.get(f"{server.url}/v1/documents", headers=bearer(tokens["reader"]), timeout=60).status_code \
            == 200
    finally:
        server.stop()


def test_revoking_the_last_user_does_not_open_the_server(wb: Workbench):
    """Once a user was made, callers sign in for good: with its only user revoked the server does not fall back to
    the one-person setup (everyone an admin)."""
    alone = MemoryAccessStore()
    _, token = alone.create_user("only", {"*": Role.ADMIN})
    server = start(wb, alone)  # no RAG_API_TOKEN
    try:
        assert httpx.get(f"{server.url}/v1/documents", headers=bearer(token), timeout=60).status_code == 200
        alone.revoke("only")
        for headers in (bearer(token), {}):
            assert httpx.get(f"{server.url}/v1/documents", headers=headers, timeout=60).status_code == 401
        assert httpx.get(f"{server.url}/v1/health", timeout=60).json()["auth"] is True
    finally:
        server.stop()


def test_the_one_person_setup_needs_no_token(wb: Workbench):
    server = start(wb, MemoryAccessStore())  # no users, no RAG_API_TOKEN: as before users existed
    try:
        for headers in ({}, {"Authorization": "Bearer sk-whatever-an-sdk-sends"}):
            assert httpx.get(f"{server.url}/v1/documents", headers=headers, timeout=60).status_code == 200
        assert httpx.get(f"{server.url}/v1/health", timeout=60).json()["auth"] is False
    finally:
        server.stop()


def test_a_trusted_proxy_names_the_user_and_an_untrusted_peer_cannot(wb: Workbench, store: MemoryAccessStore,
                                                                    tokens: dict[str, str]):
    named = {"X-Forwarded-User": "reader"}
    trusting = start(wb, store, auth__trusted_proxies="127.0.0.1")
    elsewhere = start(wb, store, auth__trusted_proxies="10.1.2.0/24")  # the test's 127.0.0.1 is not among them
    try:
        assert httpx.get(f"{trusting.url}/v1/documents", headers=named, timeout=60).status_code == 200
        r = httpx.delete(f"{trusting.url}/v1/documents/{DOC}", headers=named, timeout=60)
        assert r.status_code == 403 and "you are a reader" in message(r)  # the header's user, with that user's role
        unknown = httpx.get(f"{trusting.url}/v1/documents", headers={"X-Forwarded-User": "nobody"}, timeout=60)
        assert unknown.status_code == 401 and "'nobody'" in message(unknown)
        assert httpx.get(f"{elsewhere.url}/v1/documents", headers=named, timeout=60).status_code == 401
        # Ignored from an untrusted peer: the token decides, whatever the header claims.
        r = httpx.delete(f"{elsewhere.url}/v1/documents/no/such.md", timeout=60,
                         headers={"X-Forwarded-User": "admin", **bearer(tokens["reader"])})
        assert r.status_code == 403 and "you are a reader" in message(r)
    finally:
        trusting.stop()
        elsewhere.stop()


# ---------------------------------------------------------------------------------- what users did, their sessions
def test_changes_are_audited_under_the_callers_name(server: live.LiveServer, store: MemoryAccessStore,
                                                    tokens: dict[str, str], wb: Workbench, tmp_path: Path):
    kb = wb.settings.kb_name
    editor = bearer(tokens["editor"])
    up = httpx.post(f"{server.url}/v1/documents", headers=editor, timeout=120,
                    files={"files": ("beta.md", b"# Beta\n\nThe beta job runs hourly.\n", "text/markdown")})
    assert up.status_code == 200, up.text
    tagged = httpx.post(f"{server.url}/v1/documents/beta.md/tags", headers=editor, timeout=60,
                        json={"tags": {"team": ["sre"]}})
    assert tagged.status_code == 200, tagged.text
    edited = httpx.patch(f"{server.url}/v1/documents/beta.md/chunks/0", headers=editor, timeout=60,
                         json={"disabled": True})
    assert edited.status_code == 200 and edited.json()["history"][-1]["who"] == "editor", edited.text
    assert httpx.delete(f"{server.url}/v1/documents/beta.md", headers=editor, timeout=60).status_code == 200
    events = [(e.user, e.action, e.kb, e.target) for e in reversed(store.audit(user="editor"))
              if e.target.startswith("beta.md")]
    assert events == [("editor", "documents.upload", kb, "beta.md"), ("editor", "tags.set", kb, "beta.md"),
                      ("editor", "chunks.edit", kb, "beta.md#chunk-0"), ("editor", "documents.delete", kb, "beta.md")]
    made = httpx.post(f"{server.url}/v1/kbs", json={"name": "audited_kb"}, headers=bearer(TOKEN), timeout=60)
    assert made.status_code == 201
    assert httpx.delete(f"{server.url}/v1/kbs/audited_kb", headers=bearer(TOKEN), timeout=60).status_code == 200
    assert [e.action for e in reversed(store.audit(kb="audited_kb"))] == ["kbs.create", "kbs.delete"]
    assert {e.user for e in store.audit(kb="audited_kb")} == {"local"}  # RAG_API_TOKEN: the one person's name


def test_a_users_chat_session_is_their_own(server: live.LiveServer, tokens: dict[str, str]):
    asked = httpx.post(f"{server.url}/api/chat", headers=bearer(tokens["reader"]), timeout=120,
                       json={"Id": "shared-id", "Question": "alpha service"})
    assert asked.status_code == 200 and asked.json()["data"]["sessionId"] == "shared-id", asked.text
    mine = httpx.get(f"{server.url}/api/chat/session/shared-id", headers=bearer(tokens["reader"]), timeout=60)
    assert mine.status_code == 200 and mine.json()["data"]["messagePairCount"] == 1
    # Another user, even naming the first one in X-User-Id, does not see it.
    theirs = httpx.get(f"{server.url}/api/chat/session/shared-id", timeout=60,
                       headers={**bearer(tokens["editor"]), "X-User-Id": "reader"})
    assert theirs.status_code == 404
    assert re.search("No session 'shared-id'", message(theirs))


def test_a_rating_needs_to_read_the_turns_knowledge_base_and_is_audited(server: live.LiveServer,
                                                                         store: MemoryAccessStore,
                                                                         tokens: dict[str, str]):
    asked = httpx.post(f"{server.url}/api/chat", headers=bearer(tokens["reader"]), timeout=120,
                       json={"Question": "alpha service restarts"})
    trace = asked.json()["data"]["traceId"]
    assert trace, asked.text
    def rate(user: str, trace_id: str) -> httpx.Response:
        return httpx.post(f"{server.url}/api/feedback", headers=bearer(tokens[user]), timeout=60,
                          json={"traceId": trace_id, "rating": "up"})

    # A turn on a knowledge base the caller cannot read is answered as one that was never recorded.
    hidden, unknown = rate("other", trace), rate("other", "0" * 32)
    assert hidden.status_code == unknown.status_code == 404
    assert message(hidden).replace(trace, "X") == message(unknown).replace("0" * 32, "X")
    rated = httpx.post(f"{server.url}/api/feedback", headers=bearer(tokens["reader"]), timeout=60,
                       json={"traceId": trace, "rating": "down", "comment": "too vague"})
    assert rated.status_code == 200 and rated.json()["data"]["rating"] == "down", rated.text
    (event,) = store.audit(action="feedback.rate", user="reader")
    assert event.target == trace and event.detail == {"rating": "down"}
    # Only editors see the recorded turns (the questions people asked).
    assert httpx.get(f"{server.url}/api/feedback", headers=bearer(tokens["reader"]), timeout=60).status_code == 403
    listed = httpx.get(f"{server.url}/api/feedback", headers=bearer(tokens["editor"]), timeout=60)
    assert trace in {t["traceId"] for t in listed.json()["data"]}


def test_users_let_serve_bind_a_public_address():
    from rag_core.errors import ConfigError
    from rag_core.service.security import check_bind

    check_bind("0.0.0.0", "", False, users=True)
    with pytest.raises(ConfigError, match="users create"):
        check_bind("0.0.0.0", "", False)


def test_the_upload_form_names_the_knowledge_base_whose_role_counts(server: live.LiveServer,
                                                                    store: MemoryAccessStore,
                                                                    tokens: dict[str, str], wb: Workbench):
    def upload(user: str, kb: str) -> httpx.Response:
        return httpx.post(f"{server.url}/api/upload", headers=bearer(tokens[user]), timeout=120, data={"kb": kb},
                          files={"file": ("gamma.md", b"# Gamma\n\nThe gamma queue drains at noon.\n",
                                          "text/markdown")})

    refused = upload("secret", SECRET_KB)  # a reader there
    assert refused.status_code == 403 and refused.json()["code"] == 403
    assert f"needs the editor role on knowledge base {SECRET_KB!r}" in refused.json()["message"]
    assert upload("editor", SECRET_KB).status_code == 404  # hidden from them: as unknown
    done = upload("editor", wb.settings.kb_name)
    assert done.status_code == 200 and done.json()["data"]["docId"] == "gamma.md", done.text
    assert [e.target for e in store.audit(action="documents.upload", user="editor")][0] == "gamma.md"
    assert httpx.delete(f"{server.url}/v1/documents/gamma.md", headers=bearer(tokens["editor"]),
                        timeout=60).status_code == 200


def test_each_chat_turn_records_who_asked_and_the_listing_filters_by_them(server: live.LiveServer,
                                                                          tokens: dict[str, str], wb: Workbench):
    kb = wb.settings.kb_name
    by_reader = httpx.post(f"{server.url}/api/chat", headers=bearer(tokens["reader"]), timeout=120,
                           json={"Question": "who restarts the alpha service?"})
    by_editor = httpx.post(f"{server.url}/v1/chat/completions", headers=bearer(tokens["editor"]), timeout=120,
                           json={"model": kb, "messages": [{"role": "user", "content": "alpha at night?"}]})
    with httpx.stream("POST", f"{server.url}/v1/chat/completions", headers=bearer(tokens["editor"]), timeout=120,
                      json={"model": kb, "stream": True, "messages": [{"role": "user", "content": "alpha?"}]}) as r:
        streamed = [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: {")]
    by_token = httpx.post(f"{server.url}/api/chat", headers=bearer(TOKEN), timeout=120,
                          json={"Question": "alpha service at night"})
    traces = [by_reader.json()["data"]["traceId"], by_editor.json()["trace_id"], streamed[-1]["trace_id"],
              by_token.json()["data"]["traceId"]]
    assert all(traces), (by_reader.text, by_editor.text, streamed[-1])
    listed = httpx.get(f"{server.url}/api/feedback", headers=bearer(TOKEN), params={"limit": 1000}, timeout=60)
    users = {t["traceId"]: t["user"] for t in listed.json()["data"]}
    # RAG_API_TOKEN is the one person: "local", as the audit log names them
    assert [users[trace] for trace in traces] == ["reader", "editor", "editor", "local"]
    only = httpx.get(f"{server.url}/api/feedback", headers=bearer(tokens["editor"]), timeout=60,
                     params={"user": "editor", "limit": 1000}).json()["data"]
    assert {t["user"] for t in only} == {"editor"} and {t["traceId"] for t in only} >= set(traces[1:3])


def test_a_document_of_a_group_is_listed_for_its_members_and_admins_only(server: live.LiveServer,
                                                                         store: MemoryAccessStore,
                                                                         tokens: dict[str, str], wb: Workbench):
    from rag_core.kb.tags import tag

    hidden = "restricted/gamma.md"
    assert wb.ingestor.ingest_uploads([(hidden, b"# Gamma\n\nThe gamma vault rotates its keys.\n")])[0].status \
        == "added"
    tag(wb.store, hidden, ["access=sre"])
    _, member = store.create_user("sre_member", {wb.settings.kb_name: Role.READER}, ["sre"])
    try:
        def listed(token: str) -> dict[str, Any]:
            r = httpx.get(f"{server.url}/v1/documents", headers=bearer(token), timeout=60)
            assert r.status_code == 200, r.text
            return {d["doc_id"]: d for d in r.json()}

        outsider = listed(tokens["reader"])
        assert hidden not in outsider and DOC in outsider and "access_groups" not in outsider[DOC]
        assert hidden in listed(member)
        admin = listed(tokens["admin"])  # an admin of the knowledge base: every document, with its groups
        assert (admin[hidden]["access_groups"], admin[DOC]["access_groups"]) == (["sre"], [])
        assert listed(TOKEN)[hidden]["access_groups"] == ["sre"]
        (mcp_outsider,) = live.run_async(mcp_calls(server.url, tokens["reader"], [("list_documents", {})]))
        assert [d["doc_id"] for d in mcp_outsider.structured_content["items"]] == [DOC]
        (mcp_admin,) = live.run_async(mcp_calls(server.url, tokens["admin"], [("list_documents", {})]))
        assert {d["doc_id"]: d["access_groups"] for d in mcp_admin.structured_content["items"]}[hidden] == ["sre"]
        # Nor are its chunks or metadata shown: it is answered as a document that does not exist.
        chunks = httpx.get(f"{server.url}/v1/documents/{hidden}/chunks", headers=bearer(tokens["reader"]), timeout=60)
        unknown = httpx.get(f"{server.url}/v1/documents/no/such.md/chunks", headers=bearer(tokens["reader"]),
                            timeout=60)
        assert chunks.status_code == unknown.status_code == 404
        assert message(chunks).replace(hidden, "X") == message(unknown).replace("no/such.md", "X")
        assert httpx.get(f"{server.url}/v1/documents/{hidden}/chunks", headers=bearer(member), timeout=60) \
            .status_code == 200
        metadata = httpx.get(f"{server.url}/v1/metadata", headers=bearer(tokens["reader"]), timeout=60).json()
        assert hidden not in metadata["documents"] and DOC in metadata["documents"]
        (read,) = live.run_async(mcp_calls(server.url, tokens["reader"],
                                           [("read_document_chunks", {"doc_id": hidden})]))
        assert read.is_error and "No document" in read.content[0].text
    finally:
        wb.ingestor.delete(hidden)
        store.revoke("sre_member")

"""`python -m rag_core users ...` and `audit list`, run in-process against one shared in-memory AccessStore (what
`bootstrap.build_access_store` is patched to return) and a real Milvus Lite catalog, whose knowledge bases are the
ones a role may name; and `python -m rag_core users` as a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rag_core import bootstrap
from rag_core.access.memory import MemoryAccessStore
from rag_core.access.records import Role
from rag_core.cli import main
from rag_core.cli.audit import who
from tests.helpers import lite_kept_open, run_cli

pytestmark = pytest.mark.milvus  # the catalog of knowledge bases is Milvus Lite's


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("cli-users")
    assert main(["--data-dir", str(data), "kb", "create", "ops"]) == 0
    yield from lite_kept_open(data)


@pytest.fixture
def store(monkeypatch) -> MemoryAccessStore:
    store = MemoryAccessStore()
    monkeypatch.setattr(bootstrap, "build_access_store", lambda settings, env=None: store)
    return store


run = run_cli


def test_create_prints_the_token_once_and_it_works(data: Path, store: MemoryAccessStore, capsys) -> None:
    code, out, err = run(data, capsys, "users", "create", "ana", "--role", "ops=editor", "--role", "*=reader",
                         "--group", "sre", "--group", "oncall", "--json")
    assert code == 0, err
    made = json.loads(out)
    assert made["token"].startswith("rwb_")
    assert made["user"] | {"created_at": ""} == {
        "name": "ana", "roles": {"*": "reader", "ops": "editor"}, "groups": ["oncall", "sre"], "created_at": "",
        "revoked_at": None, "active": True}
    principal = store.authenticate(made["token"])
    assert principal is not None and principal.role_in("ops") is Role.EDITOR and principal.role_in("biz") is Role.READER
    code, out, _ = run(data, capsys, "users", "create", "bo", "--role", "biz=admin")
    assert code == 0
    token = next(line.split()[1] for line in out.splitlines() if line.startswith("token: "))
    assert store.authenticate(token) is not None
    assert "shown only now" in out and "created bo  roles: biz=admin  groups: -" in out
    [second, first] = store.audit()
    assert (first.user, first.action, first.target, dict(first.detail)) == (
        who(), "users.create", "ana", {"roles": {"*": "reader", "ops": "editor"}, "groups": ["oncall", "sre"]})
    assert (second.action, second.target) == ("users.create", "bo")
    assert who().startswith("cli:")
    assert not any(made["token"] in json.dumps(e.to_dict()) or token in json.dumps(e.to_dict())
                   for e in store.audit())


@pytest.mark.parametrize(("argv", "message"), [
    (["users", "create", "ana", "--role", "nope=reader"],
     "error: No knowledge base 'nope': a role names one of biz, ops, or * for every one"),
    (["users", "create", "ana", "--role", "biz"], "error: A role is KB=ROLE (as docs=reader"),
    (["users", "create", "ana", "--role", "biz=owner"], "error: Unknown role 'owner'; roles: reader, editor, admin."),
    (["users", "create", "ana"], "error: users create: give at least one --role KB=ROLE"),
    (["users", "create", "a b", "--role", "*=reader"], "error: A user name is 1-64 letters"),
    (["users", "create", "ana", "--role", "*=reader", "--group", "a,b"], "error: A group name is 1-64 letters"),
    (["users", "set", "nobody", "--role", "*=reader"], "error: No user 'nobody'"),
    (["users", "set", "nobody"], "error: users set: give what changes"),
    (["users", "revoke", "nobody"], "error: No user 'nobody'"),
    (["users", "token", "nobody"], "error: No user 'nobody'"),
    (["audit", "list", "--limit", "0"], "error: --limit is how many events to show, at least 1, got 0."),
])
def test_bad_input_is_one_line(data: Path, store: MemoryAccessStore, capsys, argv: list[str], message: str) -> None:
    code, out, err = run(data, capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith(message) and err.count("\n") == 1, err
    assert store.users(include_revoked=True) == [] and store.audit() == []


def test_a_duplicate_user_is_refused(data: Path, store: MemoryAccessStore, capsys) -> None:
    assert run(data, capsys, "users", "create", "ana", "--role", "*=reader")[0] == 0
    code, _, err = run(data, capsys, "users", "create", "ana", "--role", "biz=admin")
    assert code == 2 and err == "error: A user 'ana' exists already (`users set` changes their roles).\n"
    assert [e.action for e in store.audit()] == ["users.create"]


def test_set_changes_roles_and_groups(data: Path, store: MemoryAccessStore, capsys) -> None:
    assert run(data, capsys, "users", "create", "ana", "--role", "biz=reader", "--role", "ops=reader",
               "--groups", "sre")[0] == 0
    code, out, err = run(data, capsys, "users", "set", "ana", "--role", "biz=editor", "--remove-role", "ops",
                         "--groups", "sre,oncall", "--json")
    assert code == 0, err
    assert (json.loads(out)["roles"], json.loads(out)["groups"]) == ({"biz": "editor"}, ["oncall", "sre"])
    event = store.audit(action="users.set")[0]
    assert (event.target, dict(event.detail)) == (
        "ana", {"roles": {"biz": "editor"}, "removed": ["ops"], "groups": ["oncall", "sre"]})
    code, out, _ = run(data, capsys, "users", "set", "ana", "--groups", "")
    assert code == 0 and out == "updated ana  roles: biz=editor  groups: -\n"
    code, _, err = run(data, capsys, "users", "set", "ana", "--remove-role", "ops")
    assert code == 2 and err.startswith("error: ana holds no role on 'ops' to remove (their roles: biz=editor).")
    code, _, err = run(data, capsys, "users", "set", "ana", "--role", "nope=admin")
    assert code == 2 and "No knowledge base 'nope'" in err
    code, _, err = run(data, capsys, "users", "set", "ana", "--role", "biz=admin", "--remove-role", "biz")
    assert code == 2 and "biz is both given a role and removed" in err
    assert [e.action for e in store.audit()] == ["users.set", "users.set", "users.create"]


def test_token_replaces_the_old_one_and_revoke_ends_it(data: Path, store: MemoryAccessStore, capsys) -> None:
    code, out, _ = run(data, capsys, "users", "create", "ana", "--role", "*=reader", "--json")
    old = json.loads(out)["token"]
    code, out, _ = run(data, capsys, "users", "token", "ana", "--json")
    new = json.loads(out)["token"]
    assert code == 0 and new != old and json.loads(out)["user"]["name"] == "ana"
    assert store.authenticate(old) is None and store.authenticate(new) is not None
    code, out, _ = run(data, capsys, "users", "token", "ana")
    assert code == 0 and "the old one stops working now" in out and "shown only now" in out
    newest = next(line.split()[1] for line in out.splitlines() if line.startswith("token: "))
    assert store.authenticate(new) is None and store.authenticate(newest) is not None
    code, out, _ = run(data, capsys, "users", "revoke", "ana")
    assert code == 0 and out == "revoked ana: their token stops working now\n"
    assert store.authenticate(newest) is None
    code, out, _ = run(data, capsys, "users", "revoke", "ana")
    assert code == 0 and out.startswith("ana was revoked already")
    code, _, err = run(data, capsys, "users", "token", "ana")
    assert code == 2 and err.startswith("error: ana was revoked") and err.count("\n") == 1
    assert [e.action for e in store.audit()] == ["users.revoke", "users.token", "users.token", "users.create"]
    assert all(not e.detail for e in store.audit(action="users.token"))


def test_list(data: Path, store: MemoryAccessStore, capsys) -> None:
    code, out, _ = run(data, capsys, "users", "list")
    assert code == 0 and out.startswith("no users: the workbench is a one-person tool")
    assert run(data, capsys, "users", "create", "ana", "--role", "biz=editor", "--group", "sre")[0] == 0
    assert run(data, capsys, "users", "create", "bo", "--role", "*=reader")[0] == 0
    assert run(data, capsys, "users", "revoke", "bo")[0] == 0
    code, out, _ = run(data, capsys, "users", "list")
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["name", "roles", "groups", "created"]
    assert len(lines) == 3 and lines[2].split()[:3] == ["ana", "biz=editor", "sre"]
    code, out, _ = run(data, capsys, "users", "list", "--all", "--json")
    assert [(u["name"], u["active"]) for u in json.loads(out)] == [("ana", True), ("bo", False)]
    code, out, _ = run(data, capsys, "users", "list", "--all")
    assert out.splitlines()[0].split()[-1] == "revoked" and len(out.splitlines()) == 4
    assert run(data, capsys, "users", "revoke", "ana")[0] == 0
    code, out, _ = run(data, capsys, "users", "list")
    assert code == 0 and out == "no active users (2 revoked: `users list --all` shows them)\n"


def test_audit_list_newest_first_with_filters(data: Path, store: MemoryAccessStore, capsys) -> None:
    code, out, _ = run(data, capsys, "audit", "list")
    assert code == 0 and out == "no audit events match\n"
    assert run(data, capsys, "users", "create", "ana", "--role", "biz=editor")[0] == 0
    assert run(data, capsys, "users", "set", "ana", "--role", "ops=reader")[0] == 0
    from rag_core.access.records import AuditEvent

    store.record(AuditEvent("ana", "documents.delete", "ops", "runbooks/disk_full.md"))
    code, out, _ = run(data, capsys, "audit", "list", "--json")
    events = json.loads(out)
    assert [e["action"] for e in events] == ["documents.delete", "users.set", "users.create"]
    assert set(events[0]) == {"at", "user", "action", "kb", "target", "detail"}
    code, out, _ = run(data, capsys, "audit", "list", "--action", "users.", "--limit", "1", "--json")
    assert [e["action"] for e in json.loads(out)] == ["users.set"]
    code, out, _ = run(data, capsys, "audit", "list", "--user", "ana", "--kb", "ops", "--json")
    assert [e["target"] for e in json.loads(out)] == ["runbooks/disk_full.md"]
    code, out, _ = run(data, capsys, "--kb", "ops", "audit", "list", "--json")  # the global --kb filters too
    assert [e["target"] for e in json.loads(out)] == ["runbooks/disk_full.md"]
    code, out, _ = run(data, capsys, "audit", "list")
    lines = out.splitlines()
    assert lines[0].split() == ["when", "user", "action", "kb", "target", "detail"]
    assert "documents.delete" in lines[2] and "users.set" in lines[3] and "roles=ops=reader" in lines[3]


def test_python_dash_m_users(tmp_path: Path) -> None:
    # The real store (an empty one until the SQL store lands); a role on every knowledge base needs no catalog.
    def rag(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "rag_core", "--data-dir", str(tmp_path), *argv],
                              capture_output=True, text=True, timeout=300)

    made = rag("users", "create", "ana", "--role", "*=admin", "--json")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["token"].startswith("rwb_")
    refused = rag("users", "create", "ana", "--role", "*=boss")
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr == "error: Unknown role 'boss'; roles: reader, editor, admin.\n"
    listed = rag("audit", "list", "--json")
    assert listed.returncode == 0 and isinstance(json.loads(listed.stdout), list)


def test_a_role_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "rag_core", "--data-dir", str(tmp_path), "users", "create", "ana",
                          "--role", b"biz=read\xff"], capture_output=True, timeout=300)
    assert out.returncode == 2 and out.stdout == b""
    assert out.stderr.startswith(b"error: --role: character 9 is the byte 0xFF, which is not UTF-8")
    assert out.stderr.count(b"\n") == 1

"""`--server URL`: the CLI against a real server (uvicorn on a loopback port) over a data folder made by the CLI, with
users of that data folder's access store: what a command prints remotely is what it prints locally, and every
refusal is one line (401 without a token, 403 naming the missing role, a knowledge base the caller cannot read
absent from the listing, a server that is down)."""

from __future__ import annotations

import contextlib
import io
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag_core.access.records import Role
from rag_core.bootstrap import build_access_store, build_workbench
from rag_core.cli import main
from rag_core.config import load_settings
from rag_core.service.app import create_app
from tests.helpers import SAMPLE_KB
from tests.service import live

pytestmark = pytest.mark.milvus  # opens Milvus Lite: not in `make test-unit`

ADMIN_TOKEN = "tok-SECRET-remote-admin-41c7e2"
SECRET_KB = "secret_kb"
QUERY = "disk space cleanup"
SEARCH = ["search", QUERY, "--mode", "hybrid", "--retrieve-k", "8", "--filter", "folder=runbooks/"]
EXPLAIN = ["explain", QUERY, "--expect", "runbooks/disk_full.md", "--mode", "dense"]


def captured(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli-remote")
    assert captured("--data-dir", str(path), "ingest", str(SAMPLE_KB), "--quiet")[0] == 0
    assert captured("--data-dir", str(path), "kb", "create", SECRET_KB)[0] == 0
    return path


@pytest.fixture(scope="module")
def local(data: Path) -> dict[str, tuple[int, str, str]]:
    """What the local commands print on the data folder, before the server opens it."""
    commands = {"search": SEARCH, "search --json": [*SEARCH, "--json"], "explain": EXPLAIN,
                "explain --json": [*EXPLAIN, "--json"], "docs": ["docs"], "docs --json": ["docs", "--json"],
                "kb list": ["kb", "list"]}
    return {name: captured("--data-dir", str(data), *argv) for name, argv in commands.items()}


@pytest.fixture(scope="module")
def server(data: Path, local: dict, local_embedder, milvus) -> Iterator[tuple[live.LiveServer, dict[str, str]]]:
    settings = load_settings(data_dir=data, env={}, config_file=None)
    access = build_access_store(settings)
    kb = settings.kb_name
    tokens = {name: access.create_user(name, roles)[1] for name, roles in
              {"reader": {kb: Role.READER}, "editor": {kb: Role.EDITOR}}.items()}
    app = create_app(build_workbench(settings, env={}, embedder=local_embedder), token=ADMIN_TOKEN, env={},
                     access=access)
    running = live.start(app)
    yield running, tokens
    running.stop()
    access.close()


@pytest.fixture
def as_user(server, monkeypatch: pytest.MonkeyPatch):
    """`as_user(name)`: RAG_TOKEN is that user's token (None: no token at all)."""
    _, tokens = server
    monkeypatch.delenv("RAG_API_TOKEN", raising=False)
    monkeypatch.delenv("RAG_SERVER", raising=False)

    def sign_in(name: str | None) -> None:
        if name is None:
            monkeypatch.delenv("RAG_TOKEN", raising=False)
        else:
            monkeypatch.setenv("RAG_TOKEN", tokens[name])
    return sign_in


def remote(server, *argv: str) -> tuple[int, str, str]:
    return captured("--server", server[0].url, *argv)


def without_timings(text: str) -> dict:
    answer = json.loads(text)
    answer.pop("timings")
    return answer


def test_a_readers_search_and_explain_print_what_the_local_commands_print(server, local, as_user):
    as_user("reader")
    code, out, err = remote(server, *SEARCH)
    assert (code, out) == local["search"][:2], err
    assert "runbooks/disk_full.md#chunk-" in out
    code, out, _ = remote(server, *SEARCH, "--json")
    mine = without_timings(out)
    theirs = without_timings(local["search --json"][1])
    assert [h["evidence_key"] for h in mine["raw_hits"]] == [h["evidence_key"] for h in theirs["raw_hits"]]
    assert {**mine, "scope": None} == {**theirs, "scope": None}  # the reader's scope is named, else the same
    code, out, _ = remote(server, *EXPLAIN)
    assert (code, out) == local["explain"][:2]
    assert "runbooks/disk_full.md" in out
    code, out, _ = remote(server, *EXPLAIN, "--json")
    assert code == 0 and json.loads(out)["verdict"] == json.loads(local["explain --json"][1])["verdict"]


def test_the_documents_listing_is_the_local_one(server, local, as_user, monkeypatch):
    """A reader's listing is the local one without the documents' access groups, which only an admin (and the one
    person at the command line) is shown."""
    as_user("reader")
    assert remote(server, "docs") == local["docs"]
    mine = json.loads(local["docs --json"][1])
    assert json.loads(remote(server, "docs", "--json")[1]) == [
        {k: v for k, v in d.items() if k != "access_groups"} for d in mine]
    as_user(None)
    monkeypatch.setenv("RAG_API_TOKEN", ADMIN_TOKEN)
    assert json.loads(remote(server, "docs", "--json")[1]) == mine


def test_a_knowledge_base_the_caller_cannot_read_is_not_listed(server, local, as_user, monkeypatch):
    as_user("reader")
    code, out, _ = remote(server, "kb", "list")
    assert code == 0 and out.splitlines() == [line for line in local["kb list"][1].splitlines()
                                              if not line.startswith(SECRET_KB)]
    assert len(out.splitlines()) == 1
    names = [kb["name"] for kb in json.loads(remote(server, "kb", "list", "--json")[1])]
    assert names == [load_settings(env={}).kb_name]
    as_user(None)
    monkeypatch.setenv("RAG_API_TOKEN", ADMIN_TOKEN)  # the server's own token: an admin of everything
    assert remote(server, "kb", "list") == local["kb list"]
    assert SECRET_KB in local["kb list"][1]


def test_a_readers_upload_is_refused_naming_the_role_and_an_editors_is_indexed(server, as_user, tmp_path):
    note = tmp_path / "note.md"
    note.write_text("# Remote\n\nUploaded through the server.\n", encoding="utf-8")
    as_user("reader")
    code, out, err = remote(server, "ingest", str(note), "--prefix", "remote")
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("error: ") and "editor" in err and "Traceback" not in err
    as_user("editor")
    code, out, err = remote(server, "ingest", str(note), "--prefix", "remote")
    assert code == 0, err
    assert out.splitlines()[0].startswith("added     remote/note.md  (1 chunks, ")
    assert out.splitlines()[-1] == "1 added, 0 replaced, 0 unchanged, 0 failed, 0 skipped"
    code, out, _ = remote(server, "ingest", str(note), "--prefix", "remote", "--json")
    assert code == 0 and [r["status"] for r in json.loads(out)] == ["unchanged"]
    assert "remote/note.md" in remote(server, "docs")[1]


def test_without_a_token_the_server_says_so_in_one_line(server, as_user):
    as_user(None)
    code, out, err = remote(server, *SEARCH)
    assert (code, out) == (2, "")
    assert err == f"error: the server {server[0].url} needs a token: set RAG_TOKEN to yours (`users create` on " \
                  "the server prints one).\n"


def test_an_unknown_knowledge_base_is_the_servers_404_message(server, as_user, monkeypatch):
    as_user(None)
    monkeypatch.setenv("RAG_API_TOKEN", ADMIN_TOKEN)
    code, out, err = remote(server, "--kb", "nowhere", "docs")
    assert (code, out) == (2, "") and err.count("\n") == 1 and "nowhere" in err


def test_a_server_that_is_down_is_one_line(as_user, monkeypatch):
    monkeypatch.delenv("RAG_TOKEN", raising=False)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("RAG_SERVER", f"http://127.0.0.1:{port}")  # the environment names the server too
    code, out, err = captured("search", QUERY)
    assert (code, out) == (2, "")
    assert err.startswith(f"error: cannot reach the server http://127.0.0.1:{port} (") and err.count("\n") == 1


def test_commands_that_only_work_locally_are_refused_naming_those_that_work(server, as_user):
    as_user("reader")
    code, out, err = remote(server, "reindex")
    assert (code, out) == (2, "")
    assert err == "error: `reindex` works on the local data folder only; with --server these work: search, " \
                  "explain, kb list, docs, ingest.\n"
    assert remote(server, "kb", "delete", SECRET_KB, "--yes")[0] == 2
    code, _, err = remote(server, "search", QUERY, "--as", "editor")
    assert code == 2 and "--as works on the local data folder only" in err

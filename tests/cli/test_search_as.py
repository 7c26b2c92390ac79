"""`search --as USER` and `explain --as USER`: an admin looks up as a user sees the knowledge base (their access
groups), in process (same code path as `python -m rag_core`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_core import bootstrap
from rag_core.access.memory import MemoryAccessStore
from rag_core.access.records import Role
from rag_core.cli import main
from tests.helpers import SAMPLE_KB

pytestmark = pytest.mark.milvus  # opens Milvus Lite in its tests: not in `make test-unit`

DOCS = ["runbooks/cpu_high.md", "runbooks/disk_full.md", "policies/oncall_zh.md"]
QUERY = "disk space cleanup"


def run(capsys, data: Path, *argv: str) -> tuple[int, str, str]:
    code = main(["--data-dir", str(data), *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cli-search-as")
    assert main(["--data-dir", str(path), "ingest", *(str(SAMPLE_KB / d) for d in DOCS), "--prefix", "kb",
                 "--quiet"]) == 0
    assert main(["--data-dir", str(path), "tag", "kb/disk_full.md", "access=sre"]) == 0
    return path


@pytest.fixture
def users(monkeypatch) -> MemoryAccessStore:
    store = MemoryAccessStore()
    store.create_user("sam", {"*": Role.READER}, groups=["sre"])
    store.create_user("olga", {"*": Role.READER}, groups=["finance"])
    store.create_user("ada", {"*": Role.ADMIN})
    monkeypatch.setattr(bootstrap, "build_access_store", lambda settings, env=None: store)
    return store


def docs(result: dict) -> list[str]:
    return [h["doc_id"] for h in result["raw_hits"]]


def keys(result: dict) -> list[str]:
    return [h["evidence_key"] for h in result["raw_hits"]]


def test_search_as_a_user_leaves_out_exactly_what_their_groups_may_not_see(data, capsys, users):
    code, out, _ = run(capsys, data, "search", QUERY, "--mode", "dense", "--json")
    everything = json.loads(out)
    assert code == 0 and "kb/disk_full.md" in docs(everything) and "no_access" not in everything
    code, out, _ = run(capsys, data, "search", QUERY, "--mode", "dense", "--json", "--as", "sam")
    assert code == 0 and docs(json.loads(out)) == docs(everything)
    code, out, err = run(capsys, data, "search", QUERY, "--mode", "dense", "--json", "--as", "olga")
    olga = json.loads(out)
    visible = [k for k in keys(everything) if not k.startswith("kb/disk_full.md#")]
    assert code == 0 and keys(olga)[:len(visible)] == visible and "kb/disk_full.md" not in docs(olga)
    assert "no_access" not in olga and "kb/disk_full.md" not in out + err  # a reader is told nothing about it
    code, out, _ = run(capsys, data, "search", QUERY, "--mode", "dense", "--json", "--as", "ada")
    ada = json.loads(out)
    # an admin of the knowledge base in no group: the same hits as olga's, and told how many the groups hid
    assert keys(ada) == keys(olga) and ada["no_access"] == docs(everything).count("kb/disk_full.md") > 0


def test_search_as_an_unknown_user_is_one_line(data, capsys, users):
    code, out, err = run(capsys, data, "search", QUERY, "--as", "nobody")
    assert code != 0 and out == "" and len(err.strip().splitlines()) == 1 and "--as nobody: no such user" in err
    users.revoke("olga")
    code, _, err = run(capsys, data, "search", QUERY, "--as", "olga")
    assert code != 0 and "--as olga: no such user (or revoked)" in err


def test_explain_as_a_user_does_not_know_a_document_hidden_from_them(data, capsys, users):
    code, _, err = run(capsys, data, "explain", QUERY, "--expect", "kb/disk_full.md", "--as", "olga")
    assert code != 0 and "No document 'kb/disk_full.md' in the knowledge base" in err
    code, out, _ = run(capsys, data, "explain", QUERY, "--expect", "kb/disk_full.md", "--as", "sam", "--json")
    assert code == 0 and json.loads(out)["doc_id"] == "kb/disk_full.md"

"""`python -m rag_core sources ...` end to end, in-process with real Milvus Lite and the local embedder: add, list,
show, sync (--dry-run, --json, --all, the delete guard), remove, and the one-line refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import lite_kept_open, run_cli

pytestmark = pytest.mark.milvus


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("cli-sources")
    yield from lite_kept_open(data)


run = run_cli


def test_add_sync_show_list_and_remove(data: Path, tmp_path: Path, capsys) -> None:
    docs = tmp_path / "team-docs"
    for i in range(4):
        (docs / "runbooks").mkdir(parents=True, exist_ok=True)
        (docs / "runbooks" / f"r{i}.md").write_text(f"# Runbook {i}\n\nRestart worker {i}.", encoding="utf-8")
    (docs / "draft.md").write_text("# Draft\n\nnot yet", encoding="utf-8")
    code, out, _ = run(data, capsys, "sources", "add", "biz", "folder", str(docs), "--exclude", "draft*", "--json")
    added = json.loads(out)
    assert code == 0 and (added["name"], added["folder"], added["kb"]) == ("team-docs", "team-docs", "biz")
    assert added["options"] == {"exclude": ["draft*"]} and added["status"] == {}

    code, out, _ = run(data, capsys, "sources", "sync", "team-docs", "--dry-run", "--json")
    assert code == 0 and json.loads(out)["added"] == 4
    code, out, _ = run(data, capsys, "docs", "--json")
    assert json.loads(out) == []  # the dry run changed nothing

    code, out, _ = run(data, capsys, "sources", "sync", "team-docs", "--json", "--quiet")
    result = json.loads(out)
    assert code == 0 and {k: result[k] for k in ("added", "replaced", "unchanged", "deleted", "failed")} == {
        "added": 4, "replaced": 0, "unchanged": 0, "deleted": 0, "failed": 0}
    code, out, _ = run(data, capsys, "sources", "sync", "--all", "--json")
    assert code == 0 and [r["unchanged"] for r in json.loads(out)] == [4]

    for i in range(2):
        (docs / "runbooks" / f"r{i}.md").unlink()
    code, _, err = run(data, capsys, "sources", "sync", "biz/team-docs")
    assert code == 2 and err.count("\n") == 1 and "would delete 2 of its 4 documents" in err
    code, out, _ = run(data, capsys, "sources", "sync", "team-docs", "--allow-deletes")
    assert code == 0 and "synced biz/team-docs: 0 added, 0 replaced, 2 unchanged, 2 deleted, 0 failed" in out

    code, out, _ = run(data, capsys, "sources", "show", "team-docs", "--json")
    shown = json.loads(out)
    assert shown["documents"] == 2 and shown["status"]["deleted"] == 2 and shown["status"]["ok"]
    code, out, _ = run(data, capsys, "sources", "list")
    assert code == 0 and out.startswith("biz/team-docs  folder ") and "2 deleted" in out

    code, out, _ = run(data, capsys, "sources", "set", "team-docs", "--every", "45", "--json")
    assert code == 0 and json.loads(out)["every"] == 45
    code, out, _ = run(data, capsys, "sources", "show", "team-docs")
    assert "every 45 min, next " in out
    code, _, err = run(data, capsys, "sources", "set", "team-docs", "--every", "-5")
    assert code == 2 and err.count("\n") == 1 and "every -5" in err
    code, _, err = run(data, capsys, "sources", "set", "nope", "--every", "5")
    assert code != 0 and err.count("\n") == 1 and "unknown source 'nope'" in err

    code, out, _ = run(data, capsys, "sources", "remove", "team-docs", "--delete-documents")
    assert code == 0 and "removed source biz/team-docs and its 2 documents" in out
    code, out, _ = run(data, capsys, "sources", "list", "--json")
    assert json.loads(out) == []
    code, out, _ = run(data, capsys, "docs", "--json")
    assert json.loads(out) == []
    code, out, _ = run(data, capsys, "audit", "list", "--json")
    assert {"sources.add", "sources.sync", "sources.set", "sources.remove"} <= {e["action"] for e in json.loads(out)}


def test_bad_input_is_one_line_naming_the_thing(data: Path, tmp_path: Path, capsys) -> None:
    cases = [
        (("sources", "add", "nope", "folder", str(tmp_path)), "nope"),
        (("sources", "add", "biz", "ftp", str(tmp_path)), "unknown source type 'ftp'; known types: "),
        (("sources", "add", "biz", "folder", str(tmp_path / "missing")), "missing: no such folder"),
        (("sources", "show", "ghost"), "unknown source 'ghost'"),
        (("sources", "sync"), "name one source, or give --all"),
    ]
    for argv, expected in cases:
        code, _, err = run(data, capsys, *argv)
        assert code == 2 and err.startswith("error: ") and err.count("\n") == 1 and expected in err, (argv, err)
    run(data, capsys, "sources", "add", "biz", "folder", str(tmp_path), "--name", "twice")
    code, _, err = run(data, capsys, "sources", "add", "biz", "folder", str(tmp_path), "--name", "twice")
    assert code == 2 and "has a source 'twice' already" in err

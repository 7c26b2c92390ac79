"""The CLI's changing commands record who did what (`cli:<OS user>`) in the audit log, run in-process with real
Milvus Lite and the local embedder against one shared in-memory AccessStore; a log that cannot be written costs one
warning line on stderr and never the change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_core import bootstrap
from rag_core.access.memory import MemoryAccessStore
from rag_core.access.records import AuditEvent
from rag_core.cli.audit import who
from rag_core.errors import StoreError
from rag_core.feedback import FILE_NAME, TurnStore
from tests.feedback.test_store import record
from tests.helpers import SAMPLE_KB, lite_kept_open, run_cli

pytestmark = pytest.mark.milvus

DISK = str(SAMPLE_KB / "runbooks" / "disk_full.md")
CPU = str(SAMPLE_KB / "runbooks" / "cpu_high.md")


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("cli-audit")
    yield from lite_kept_open(data)


@pytest.fixture
def store(monkeypatch) -> MemoryAccessStore:
    store = MemoryAccessStore()
    monkeypatch.setattr(bootstrap, "build_access_store", lambda settings, env=None: store)
    return store


run = run_cli


def events(store: MemoryAccessStore, after: int = 0) -> list[tuple[str, str, str, dict]]:
    """(action, kb, target, detail) of the events after the first `after`, oldest first; each by the CLI's user."""
    kept = list(reversed(store.audit(limit=1000)))[after:]
    assert {e.user for e in kept} <= {who()}
    return [(e.action, e.kb, e.target, dict(e.detail)) for e in kept]


def test_changing_commands_are_recorded_and_reading_ones_are_not(data: Path, store: MemoryAccessStore,
                                                                 capsys) -> None:
    code, out, err = run(data, capsys, "ingest", DISK, "--json", "--quiet")
    assert code == 0, err
    chunks = json.loads(out)[0]["chunks"]
    assert run(data, capsys, "ingest", DISK, "--quiet")[0] == 0  # unchanged: nothing recorded
    assert run(data, capsys, "docs")[0] == 0
    assert run(data, capsys, "tag", "disk_full.md", "team=sre")[0] == 0
    assert run(data, capsys, "tag", "disk_full.md")[0] == 0  # only shows its tags
    assert run(data, capsys, "chunks", "disable", "disk_full.md#chunk-1")[0] == 0
    assert run(data, capsys, "chunks", "keywords", "disk_full.md#chunk-1", "journald", "vacuum")[0] == 0
    code, out, _ = run(data, capsys, "chunks", "history", "disk_full.md#chunk-1", "--json")
    assert code == 0 and {h["who"] for h in json.loads(out)["history"]} == {who()}  # as the audit log names them
    assert run(data, capsys, "search", "disk full")[0] == 0
    assert run(data, capsys, "reindex", "--quiet")[0] == 0
    code, _, err = run(data, capsys, "eval", "generate", "--size", "2", "--name", "two", "--quiet")
    assert code == 0, err
    assert run(data, capsys, "eval", "generate", "--size", "2", "--out", str(data / "two.jsonl"), "--quiet")[0] == 0
    assert events(store) == [
        ("documents.upload", "biz", "disk_full.md", {"status": "added", "chunks": chunks}),
        ("tags.set", "biz", "disk_full.md", {"tags": ["team=sre"], "replace": False}),
        ("chunks.disable", "biz", "disk_full.md#chunk-1", {}),
        ("chunks.keywords", "biz", "disk_full.md#chunk-1", {"keywords": ["journald", "vacuum"]}),
        ("documents.reindex", "biz", "", {"documents": 1, "failed": 0}),
        ("testsets.create", "biz", "two", {"items": 2, "generator": "offline"}),
    ]
    seen = len(store.audit(limit=1000))
    assert run(data, capsys, "kb", "create", "small", "--max-size", "400")[0] == 0
    assert run(data, capsys, "kb", "set", "small", "--retrieve-k", "30")[0] == 0
    assert run(data, capsys, "kb", "copy", "biz", "copied", "--quiet")[0] == 0
    assert run(data, capsys, "kb", "list")[0] == 0
    assert run(data, capsys, "kb", "delete", "copied", "--yes")[0] == 0
    assert run(data, capsys, "delete", "disk_full.md")[0] == 0
    assert events(store, seen) == [
        ("kbs.create", "small", "small", {"chunk.max-size": 400}),
        ("kbs.set", "small", "small", {"rag.retrieve-k": 30}),
        ("kbs.copy", "copied", "copied", {"from": "biz", "documents": 1}),
        ("kbs.delete", "copied", "copied", {"documents": 1, "chunks": chunks}),
        ("documents.delete", "biz", "disk_full.md", {}),
    ]
    seen = len(store.audit(limit=1000))
    turns = TurnStore(data / FILE_NAME)
    turn = turns.add(record("s", "disk full?", "ops"))
    assert run(data, capsys, "feedback", "rate", turn.trace_id, "down", "--comment", "stale")[0] == 0
    assert run(data, capsys, "feedback", "list")[0] == 0
    assert events(store, seen) == [("feedback.rate", "ops", turn.trace_id, {"rating": "down", "comment": "stale"})]


class BrokenLog(MemoryAccessStore):
    def record(self, event: AuditEvent) -> AuditEvent:
        raise StoreError("the audit database is unreachable")


def test_a_log_that_cannot_be_written_warns_once_and_keeps_the_change(data: Path, capsys, monkeypatch) -> None:
    monkeypatch.setattr(bootstrap, "build_access_store", lambda settings, env=None: BrokenLog())
    code, out, err = run(data, capsys, "--kb", "small", "ingest", DISK, CPU, "--json", "--quiet")
    assert code == 0 and [r["status"] for r in json.loads(out)] == ["added", "added"]
    assert err.count("\n") == 1  # two documents, one warning
    assert err.startswith("warning: documents.upload of 'disk_full.md' was done, but the audit log did not record "
                          "it (StoreError: the audit database is unreachable).")

    def unreachable(settings, env=None):
        raise StoreError("could not connect to the database")

    monkeypatch.setattr(bootstrap, "build_access_store", unreachable)
    code, out, err = run(data, capsys, "--kb", "small", "delete", "disk_full.md")
    assert code == 0 and out == "deleted disk_full.md\n"
    assert err == ("warning: documents.delete of 'disk_full.md' was done, but the audit log did not record it "
                   "(StoreError: could not connect to the database).\n")
    code, out, _ = run(data, capsys, "--kb", "small", "docs", "--json")
    assert [d["doc_id"] for d in json.loads(out)] == ["cpu_high.md"]

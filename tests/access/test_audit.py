"""`access.audit.audited`: the one helper every entry point records a change with; a log that fails never loses
the change (it says so in one line and returns None)."""

from __future__ import annotations

import logging
import os

import pytest

from rag_core.access.audit import audited
from rag_core.access.memory import MemoryAccessStore
from rag_core.access.records import AuditEvent
from rag_core.errors import StoreError


class BrokenLog(MemoryAccessStore):
    def record(self, event: AuditEvent) -> AuditEvent:
        raise StoreError("database is locked\nsecond line")


def test_an_event_is_recorded_with_its_time() -> None:
    store = MemoryAccessStore()
    kept = audited(store, "cli:ana", "documents.delete", "biz", "runbooks/disk_full.md", {"chunks": 3})
    assert kept is not None and kept.at
    [event] = store.audit()
    assert event == kept
    assert (event.user, event.action, event.kb, event.target, dict(event.detail)) == (
        "cli:ana", "documents.delete", "biz", "runbooks/disk_full.md", {"chunks": 3})


def test_a_failing_log_warns_once_in_one_line_and_raises_nothing() -> None:
    said: list[str] = []
    assert audited(BrokenLog(), "cli:ana", "users.create", target="bob", warn=said.append) is None
    [line] = said
    assert "\n" not in line and "database is locked second line" in line
    assert line.startswith("warning: users.create of 'bob' was done, but the audit log did not record it")
    assert "StoreError" in line


def test_without_a_warn_callback_the_failure_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="rag_core.audit"):
        assert audited(BrokenLog(), "ana", "feedback.rate", "biz", "f" * 32, {"rating": "down"}) is None
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    assert "feedback.rate" in caplog.records[0].getMessage()


def test_the_cli_names_the_account_it_runs_as_not_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import pwd

    from rag_core.cli.audit import who

    monkeypatch.setenv("USER", "someone-else")
    monkeypatch.setenv("LOGNAME", "someone-else")
    assert who() == f"cli:{pwd.getpwuid(os.getuid()).pw_name}"

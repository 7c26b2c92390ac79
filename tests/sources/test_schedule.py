"""Scheduled syncs (issue 38): what is due is a function of the sources and an injected clock; the scheduler runs the
due ones once each, the longest waiting first, and goes on past one that fails or runs elsewhere."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from rag_core.errors import SourceError
from rag_core.files import FileLock
from rag_core.sources.book import Source, SourceBook
from rag_core.sources.schedule import Scheduler, due, next_run
from rag_core.store.kept import MemoryDocument

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


def synced(minutes_ago: int) -> dict[str, object]:
    return {"started_at": (NOW - timedelta(minutes=minutes_ago)).isoformat()}


def test_what_is_due_follows_each_sources_interval_and_last_sync() -> None:
    never = Source("never", "biz", "folder", "/x", "never", every=30)
    late = Source("late", "biz", "folder", "/x", "late", every=30, status=synced(45))
    fresh = Source("fresh", "biz", "folder", "/x", "fresh", every=30, status=synced(10))
    manual = Source("manual", "biz", "folder", "/x", "manual", status=synced(600))
    assert next_run(manual) is None and next_run(fresh) == NOW + timedelta(minutes=20)
    assert [s.name for s in due([fresh, late, manual, never], NOW)] == ["never", "late"]
    assert [s.name for s in due([fresh, late, manual, never], NOW + timedelta(minutes=20))] == ["never", "late",
                                                                                                "fresh"]


def test_the_scheduler_runs_each_due_source_once_and_goes_past_a_failure() -> None:
    book = SourceBook(MemoryDocument(), FileLock(None), None)
    for name, every in (("a", 30), ("b", 30), ("c", 0)):
        book.add(Source(name, "biz", "folder", "/x", name, every=every))
    ran: list[str] = []

    def sync(source: Source) -> None:
        ran.append(source.name)
        if source.name == "a":
            raise SourceError("source biz/a: a sync of it is running")
        book.save(source, {"started_at": NOW.isoformat()}, {})

    scheduler = Scheduler(book, sync, clock=lambda: NOW)
    assert scheduler.tick() == ["biz/b"] and ran == ["a", "b"]
    assert scheduler.tick() == [] and ran == ["a", "b", "a"]  # b synced at NOW is not due again; a still is

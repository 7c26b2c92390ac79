"""Scheduled syncs (`sources add --every MINUTES`): `serve` looks every minute for sources whose next sync is due and
runs them one after the other in a background thread. Every API worker looks, and a source's sync lock
(book.sync_lock, across processes and, with the shared database, machines) lets one of them run it; the others find
it running and leave it. The clock is given (`now`), so what is due is a pure function of the sources and the time."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from ..errors import RagError
from .book import Source, SourceBook

log = logging.getLogger(__name__)
CHECK_SECONDS = 60  # how often serve looks for due syncs


def next_run(source: Source) -> datetime | None:
    """When `source`'s next scheduled sync is due (its last sync's start + `every` minutes; at once when it never
    synced), None when it has no schedule."""
    if source.every <= 0:
        return None
    started = source.status.get("started_at")
    if not started:
        return datetime.min.replace(tzinfo=UTC)
    return datetime.fromisoformat(started) + timedelta(minutes=source.every)


def due(sources: list[Source], now: datetime) -> list[Source]:
    """The scheduled sources whose next sync is due at `now`, the longest waiting first."""
    waiting = [(when, s) for s in sources if (when := next_run(s)) is not None and when <= now]
    return [s for _, s in sorted(waiting, key=lambda pair: (pair[0], pair[1].key))]


def run_due(book: SourceBook, now: datetime, sync: Callable[[Source], object]) -> list[str]:
    """Runs `sync(source)` for each source due at `now`; one that fails (or runs elsewhere) is logged and the next
    goes on. The keys of those synced."""
    done = []
    for source in due(book.all(), now):
        try:
            sync(source)
        except RagError as exc:
            log.warning("scheduled sync of %s: %s", source.key, exc)
            continue
        done.append(source.key)
    return done


class Scheduler:
    """The background thread of `serve`: `run_due` every `period` seconds until `stop`; `sync(source)` runs one sync
    (sources.manage.sync_source on the source's open knowledge base)."""

    def __init__(self, book: SourceBook, sync: Callable[[Source], object],
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC), period: float = CHECK_SECONDS) -> None:
        self.book, self.sync, self.clock, self.period = book, sync, clock, period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="sources-scheduler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self.period + 5)

    def tick(self) -> list[str]:
        return run_due(self.book, self.clock(), self.sync)

    def _loop(self) -> None:
        while not self._stop.wait(self.period):
            try:
                self.tick()
            except Exception:  # noqa: BLE001 - the thread must go on; the failure is in the log
                log.exception("the sources scheduler failed; it tries again in %s s", self.period)

"""When recovery may abandon a pending version: the rule, in one place.

A versioned replace first writes a `pending` registry row (see milvus.store); if its writer dies before
the commit, the row and its chunks are left behind, invisible to readers, and `recover()` deletes them.
But several processes may write at once (the app, the API and CLI commands through the store host, or
any number of clients of a Milvus server), so a pending row is only abandoned when its writer is known
to be gone. A pending row has no fingerprint yet; its `fingerprint` field names its writer instead:
"writer <machine id> <boot id> <pid> <start ticks>".
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from ..lite.processes import ProcessId, boot_id, machine_id

ABANDONED_AFTER_S = 6 * 3600  # a writer we cannot check (another machine, an older version): this old = dead
WRITER_FIELD = "fingerprint"
F = TypeVar("F", bound=Callable[..., Any])
_writing = 0  # versioned writes in progress in this process
_writing_guard = threading.Lock()


@contextlib.contextmanager
def writing() -> Iterator[None]:
    """A write in progress: while one runs, recovery spares this process's pending versions and chunk edits."""
    global _writing
    with _writing_guard:
        _writing += 1
    try:
        yield
    finally:
        with _writing_guard:
            _writing -= 1


def tracked(write: F) -> F:
    """Marks a versioned write (see `writing`)."""

    @functools.wraps(write)
    def run(*args: Any, **kwargs: Any) -> Any:
        with writing():
            return write(*args, **kwargs)

    return run  # type: ignore[return-value]


def pending_fields() -> dict[str, str]:
    """Fields of a pending registry row that name this process as its writer."""
    me = ProcessId.current()
    return {WRITER_FIELD: f"writer {machine_id() or '-'} {boot_id() or '-'} {me.pid} {me.start}"}


def _writer(row: Mapping[str, Any]) -> tuple[str, str, ProcessId] | None:
    parts = str(row.get(WRITER_FIELD) or "").split()
    if len(parts) != 5 or parts[0] != "writer" or not (parts[3].isdigit() and parts[4].isdigit()):
        return None
    return parts[1], parts[2], ProcessId(int(parts[3]), int(parts[4]))


def abandoned(row: Mapping[str, Any], *, exclusive: bool, now_ns: int) -> bool:
    """Is this pending row's writer gone (so recovery may delete the row and its version)?

    - Written by this process: gone unless one of its writes is in progress (a write that failed and
      returned left it behind).
    - Written on this machine: gone when the machine restarted since, or the process no longer runs
      (pid and start time: a reused pid is another process). Cleaned at once, never while it runs.
    - Otherwise (another machine, or a row without a writer): gone when this process has the database to
      itself (Milvus Lite in exclusive mode: nobody else can be writing), else when older than 6 hours.
    """
    gone = known_gone(row, exclusive=exclusive)
    if gone is not None:
        return gone
    return now_ns - int(row["committed_ns"]) > ABANDONED_AFTER_S * 1_000_000_000


def known_gone(row: Mapping[str, Any], *, exclusive: bool) -> bool | None:
    """`abandoned` without the 6-hour guess: True or False when this process can tell whether the row's writer
    still runs (see `abandoned`), None when it cannot (another machine, no writer named, shared access). A
    version whose writer is known gone has its kept original and sidecar removed at once, in shared mode too."""
    writer = _writer(row)
    if writer is not None and writer[2] == ProcessId.current():
        return _writing == 0
    if writer is not None and writer[0] == (machine_id() or "-"):
        return writer[1] != (boot_id() or "-") or not writer[2].alive()
    return True if exclusive else None

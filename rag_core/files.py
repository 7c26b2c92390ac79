"""Files written whole or not at all: the JSON and JSONL kept beside the index (chunk edits, document labels, test
sets) must survive a kill mid-write with their previous content; and the lock that several processes sharing one
data folder (the app, `serve`, CLI commands) take around a read-modify-write of such a file."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path


def write_atomic(path: Path, text: str) -> None:
    """`text` into `path`, complete or not at all: written beside it, flushed, then renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _sync_folder(path.parent)  # the rename itself survives a power cut once acknowledged


def _sync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_json_object(path: Path, damaged: str) -> dict:
    """The JSON object `write_atomic` left in `path` ({} when there is none yet). A file that cannot be read or is
    not JSON raises StoreError: `damaged` (what the file holds and what to do), naming the file and the cause."""
    from .errors import StoreError

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise StoreError(damaged.format(path=path, exc=exc)) from None
    return data if isinstance(data, dict) else {}


class _Held:
    """One lock file's state in this process: the thread holding it, how many times, the open lock file, and the
    lock taken beyond it (`FileLock.beyond`)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.depth = 0
        self.fd: int | None = None
        self.beyond: contextlib.ExitStack | None = None


_files: dict[str, _Held] = {}
_files_guard = threading.Lock()


class FileLock:
    """A lock held across the threads of this process and across processes: an exclusive `flock` on `path` (made
    when missing, never deleted), taken by the first `with` of a thread and released by its last, so a thread
    that holds it may take it again (a chunk edit reads, writes the row and records it under one lock; the record's
    own read-modify-write takes it again). Every FileLock on one path in this process shares one state, so two
    objects opened on one knowledge base wait for each other as two processes do. `path` None: a lock of this
    object alone, for stores that keep no files. The flock goes with its process: a killed holder never leaves
    it held. `beyond(wait)`: a lock taken after the flock by the first `with` and released before it by the last
    (the records of a knowledge base in a shared database: store.kept.database_lock), so processes elsewhere wait
    too."""

    def __init__(self, path: Path | None,
                 beyond: Callable[[bool], contextlib.AbstractContextManager[bool]] | None = None) -> None:
        self.path = path
        self.beyond = beyond
        self._own = _Held() if path is None else None

    def _held(self) -> _Held:
        if self._own is not None:
            return self._own
        key = os.path.abspath(self.path)  # type: ignore[arg-type]
        with _files_guard:
            return _files.setdefault(key, _Held())

    @contextlib.contextmanager
    def __call__(self, wait: bool = True) -> Iterator[bool]:
        """Hold the lock for the block; yields True. `wait` False: yields False at once, without the lock, when
        another thread or process holds it (recovery when a store opens never waits behind a long write)."""
        held = self._held()
        if not held.lock.acquire(blocking=wait):
            yield False
            return
        try:
            if held.depth == 0 and not self._take(held, wait):
                yield False
                return
            held.depth += 1
            try:
                yield True
            finally:
                held.depth -= 1
                if held.depth == 0:
                    self._give(held)
        finally:
            held.lock.release()

    def _take(self, held: _Held, wait: bool) -> bool:
        """The first `with` of the thread: the flock, then the lock beyond it. False: another holds one of them."""
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return False
            except BaseException:
                os.close(fd)
                raise
            held.fd = fd
        if self.beyond is not None:
            stack = contextlib.ExitStack()
            try:
                got = stack.enter_context(self.beyond(wait))
            except BaseException:
                self._give(held)
                raise
            if not got:
                stack.close()
                self._give(held)
                return False
            held.beyond = stack
        return True

    def _give(self, held: _Held) -> None:
        """The last `with` of the thread: the lock beyond, then the flock."""
        try:
            if held.beyond is not None:
                stack, held.beyond = held.beyond, None
                stack.close()
        finally:
            if held.fd is not None:
                fd, held.fd = held.fd, None
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)

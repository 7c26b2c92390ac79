"""Our own lock around a Milvus Lite database file: one process serves it at a time.

Milvus Lite 2.5.1 locks `.<name>.lock` itself, but when a second process fails to get that lock it
deletes the lock file on its way out — so a third process gets a fresh lock and opens the same
database concurrently (measured here). We therefore take a lock of our own, which is never deleted,
before Milvus Lite is asked to open the file, and record who holds it for the error message: the pid
and the program's name only (a command line can carry secrets), readable by the owner only.
The holder is the store host (shared mode, the default) or a process that opened the file for itself
(`milvus.lite-mode = exclusive`). Within one process the lock is shared.
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

from ...errors import StoreLockedError
from .internals import lite_lock_file
from .processes import program_name, program_of

_held: dict[str, tuple[int, int]] = {}  # resolved path -> (fd, users in this process)
_guard = threading.Lock()
HOST_ROLE = "store host"  # what the store host writes as its program name


def owner_file(db: Path) -> Path:
    return db.parent / f".{db.name}.owner"


def _locked_message(db: Path, holder: str) -> str:
    if HOST_ROLE in holder:
        return (f"The knowledge base {db} is already open in {holder}, which serves it to every workbench "
                "process in shared mode, and this process asked for it alone (milvus.lite-mode = exclusive). "
                "Use milvus.lite-mode = shared (the default), or another data dir (--data-dir / RAG_DATA_DIR), or "
                f"stop the host first: `python -m rag_core --data-dir {db.parent} host stop`.")
    return (f"The knowledge base {db} is already open in {holder}, which opened it for itself "
            "(milvus.lite-mode = exclusive): Milvus Lite allows one process per database file. Close that "
            "process, or run every process in shared mode (the default), or point this one at another data "
            "dir (--data-dir / RAG_DATA_DIR), or share one Milvus server via MILVUS_URI.")


def acquire(db: Path, role: str = "") -> None:
    """Take the lock for this process (`role` names it in messages; default: the program's name).
    Raises StoreLockedError naming the holder when another process has it."""
    key = str(db.resolve())
    with _guard:
        if key in _held:
            fd, users = _held[key]
            _held[key] = (fd, users + 1)
            return
        fd = os.open(owner_file(db), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 200).decode(errors="replace").strip() or "another process"
            os.close(fd)
            error = StoreLockedError(_locked_message(db, holder))
            error.holder = holder  # type: ignore[attr-defined]
            raise error from None
        try:
            probe_lite_lock(db)
        except StoreLockedError:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            raise
        os.fchmod(fd, 0o600)  # files from older versions were world-readable
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()} ({role or program_name()})".encode())
        _held[key] = (fd, 1)


def _posix_lock_holder(path: Path) -> str:
    """Who holds a POSIX lock on `path`, from /proc/locks (Linux), as "pid N (program)"."""
    try:
        inode = str(os.stat(path).st_ino)
        with open("/proc/locks", encoding="ascii") as fh:
            for line in fh:
                parts = line.split()
                if "->" not in parts and len(parts) > 5 and parts[5].rsplit(":", 1)[-1] == inode:
                    return f"pid {parts[4]} ({program_of(int(parts[4]))})"
    except (OSError, ValueError):
        pass
    return "another program"


def probe_lite_lock(db: Path) -> None:
    """Fail early, with a clear message, when a program outside the workbench has the database open —
    before Milvus Lite's own failing open would delete that program's lock file."""
    lock = lite_lock_file(db)
    if not lock.exists():
        return
    with open(lock, "a") as fh:
        try:
            fcntl.lockf(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise StoreLockedError(f"The knowledge base {db} is already open in {_posix_lock_holder(lock)}, "
                                   "outside this workbench. Close it, or use another data dir.") from None
        fcntl.lockf(fh, fcntl.LOCK_UN)


def release(db: Path) -> bool:
    """Returns True when the last user in this process let go (the database can really be closed)."""
    key = str(db.resolve())
    with _guard:
        if key not in _held:
            return False
        fd, users = _held[key]
        if users > 1:
            _held[key] = (fd, users - 1)
            return False
        del _held[key]
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
        return True

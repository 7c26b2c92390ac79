"""Our own lock around a Milvus Lite database file.

Milvus Lite 2.5.1 locks `.<name>.lock` itself, but when a second process fails to get that lock it
deletes the lock file on its way out — so a third process gets a fresh lock and opens the same
database concurrently (measured here). We therefore take a lock of our own, which is never deleted,
before Milvus Lite is asked to open the file, and record who holds it for the error message.
Within one process the lock is shared (Milvus Lite itself shares one server per file per process).
"""

from __future__ import annotations

import fcntl
import os
import sys
import threading
from pathlib import Path

from ..errors import StoreLockedError

_held: dict[str, tuple[int, int]] = {}  # resolved path -> (fd, users in this process)
_guard = threading.Lock()


def _lock_path(db: Path) -> Path:
    return db.parent / f".{db.name}.owner"


def acquire(db: Path) -> None:
    key = str(db.resolve())
    with _guard:
        if key in _held:
            fd, users = _held[key]
            _held[key] = (fd, users + 1)
            return
        fd = os.open(_lock_path(db), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 400).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise StoreLockedError(
                f"The knowledge base {db} is already open in {holder}. Milvus Lite allows one process per "
                "database file: close that process, point this one at another data dir (--data-dir / "
                "RAG_DATA_DIR), or share one Milvus server via MILVUS_URI."
            ) from None
        try:
            probe_lite_lock(db)
        except StoreLockedError:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()} ({' '.join(sys.argv)[:160]})".encode())
        _held[key] = (fd, 1)


def _posix_lock_holder(path: Path) -> str:
    """Who holds a POSIX lock on `path`, from /proc/locks (Linux), as "pid N (command)"."""
    try:
        inode = str(os.stat(path).st_ino)
        with open("/proc/locks", encoding="ascii") as fh:
            for line in fh:
                parts = line.split()
                if "->" not in parts and len(parts) > 5 and parts[5].rsplit(":", 1)[-1] == inode:
                    cmd = Path(f"/proc/{parts[4]}/cmdline").read_bytes().replace(b"\x00", b" ").decode(errors="replace")
                    return f"pid {parts[4]} ({cmd.strip()[:160]})"
    except OSError:
        pass
    return "another program"


def probe_lite_lock(db: Path) -> None:
    """Fail early, with a clear message, when a program outside the workbench has the database open —
    before Milvus Lite's own failing open would delete that program's lock file."""
    lock = db.parent / f".{db.name}.lock"
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

"""The one place that relies on how the pinned Milvus Lite and pymilvus behave inside.

Milvus Lite 2.5.1 and pymilvus 2.6 expose no API for what the workbench needs (start Lite's server for a
file without pymilvus's per-process server manager, know its pid, tell a lost connection or an empty
BM25 collection from other failures), so this module uses their internals and the text of their errors,
and nothing else in the package does. `check_versions()` refuses other versions with a clear message,
and tests/store/lite/test_internals.py fails loudly when the installed versions behave differently
(run it after changing the pins in pyproject.toml).

What is relied on, measured with milvus-lite 2.5.1 + pymilvus 2.6.17:
- `milvus_lite.server.Server(db)` without an address serves gRPC on a Unix socket (`uds_path`); its
  `start()` takes a POSIX lock on `.<name>.lock` beside the file and passes that file to the `milvus`
  binary, which exits by itself ~1-2 s after the lock is released (when our process dies, even by
  SIGKILL). `start()` returns False when the lock is held elsewhere or the binary exits within 0.5 s.
  `stop()` releases the lock, waits for the binary and deletes the socket and the lock file. `_p` is
  the binary's Popen.
- A call on a client whose server is gone raises MilvusException(code=2, CONNECT_FAILED) within
  milliseconds (pymilvus's reconnect to the vanished socket fails), or a grpc UNAVAILABLE error.
- BM25 search on a collection without rows fails with a message containing "NaN or Inf".
"""

from __future__ import annotations

import logging
import os
import socket
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from ...errors import StoreError

PINNED_LITE = "2.5.1"
PYMILVUS_RANGE = ((2, 6), (3, 0))  # tested: 2.6.x; pyproject allows >=2.6,<3
_checked = False


def installed_versions() -> tuple[str, str]:
    """(milvus-lite, pymilvus) as installed."""
    return metadata.version("milvus-lite"), metadata.version("pymilvus")


def check_versions() -> None:
    """Refuse to run Milvus Lite with versions whose internals were not checked (see the docstring)."""
    global _checked
    if _checked:
        return
    lite, pymilvus = installed_versions()
    major_minor = tuple(int(p) for p in pymilvus.split(".")[:2])
    if lite != PINNED_LITE or not PYMILVUS_RANGE[0] <= major_minor < PYMILVUS_RANGE[1]:
        raise StoreError(
            f"Milvus Lite needs milvus-lite=={PINNED_LITE} and pymilvus>=2.6,<3 (found milvus-lite {lite}, "
            f"pymilvus {pymilvus}): other versions behave differently (the 3.x line is a different engine). "
            f"Install the pinned ones: pip install 'milvus-lite=={PINNED_LITE}' 'pymilvus>=2.6,<3'.")
    _checked = True


def lite_lock_file(db: Path) -> Path:
    """The file Milvus Lite locks (POSIX lock) while a process serves `db`."""
    return db.parent / f".{db.name}.lock"


# Client channel options for a Lite server on this machine. pymilvus asks gRPC for a keepalive ping every
# 10 s, even without calls. Lite's gRPC server keeps gRPC's ping policy (at most one ping per 2 hours while
# no call is open, 5 minutes during one; after 2 strikes it hangs up), so a client that stays idle for a
# few minutes (an evaluation embedding its corpus, an app between users) earns strikes and gets
# `GOAWAY ... too_many_pings`, which gRPC prints on stderr (the client reconnects; harmless but alarming:
# 4 times in a 5-minute evaluation under load, measured). On a Unix socket a dead server is seen at once
# (the connection closes), so keepalive pings buy nothing here: they are turned off.
LOCAL_GRPC_OPTIONS: dict[str, Any] = {
    "grpc.keepalive_time_ms": 2**31 - 1,
    "grpc.keepalive_permit_without_calls": 0,
}


# Set by the unit-test run (`make test-unit`, tests/conftest.py) in its process and the ones it starts: a test there
# that opens Milvus Lite fails (with an error no page or CLI catches and shows), instead of slowing the run unnoticed.
FORBID_ENV = "WORKBENCH_FORBID_MILVUS_LITE"


def refuse_if_forbidden(db: Path) -> None:
    if os.environ.get(FORBID_ENV):
        raise RuntimeError(f"Milvus Lite may not be opened here ({FORBID_ENV} is set, as in `make test-unit`): "
                           f"{db}. A test that opens Milvus runs in `make test`: give it the `milvus` fixture "
                           "(directly or through a fixture that opens Milvus) or mark it pytest.mark.milvus.")


class LiteServer:
    """Milvus Lite's server for one `.db` file, run by this process on a Unix socket."""

    def __init__(self, db: Path) -> None:
        check_versions()
        from milvus_lite.server import Server

        self.db = db
        self._server = Server(str(db))
        self.uri = self._server.uds_path  # "unix:/tmp/...sock"

    @property
    def pid(self) -> int:
        """The `milvus` binary's pid (0 before start)."""
        process = getattr(self._server, "_p", None)
        return process.pid if process is not None else 0

    def running(self) -> bool:
        process = getattr(self._server, "_p", None)
        return process is not None and process.poll() is None

    def start(self, timeout: float = 60.0) -> bool:
        """Start the binary and wait until its socket accepts connections. False when it could not
        start (the file is locked elsewhere or Lite refused it: see lite.file.diagnose)."""
        refuse_if_forbidden(self.db)
        # Lite logs its failures on the root logger; the caller explains them instead.
        previous = logging.root.level
        logging.root.setLevel(logging.CRITICAL)
        try:
            if not self._server.init() or not self._server.start():
                return False
        finally:
            logging.root.setLevel(previous)
        path = self.uri.removeprefix("unix:")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.running():
                self.stop()
                return False
            with socket.socket(socket.AF_UNIX) as probe:
                if probe.connect_ex(path) == 0:
                    return True
            time.sleep(0.02)
        self.stop()
        return False

    def stop(self) -> None:
        """Stop the binary (waits for it, kills it after 2 s) and remove its socket and lock file."""
        self._server.stop()
        # milvus_lite's Server removes the lock file by name, and again when it is garbage-collected: by then a new
        # server may serve the same file (after a reconnect) with a lock file of that name, which must stay (without
        # it, another program could open the file beside that server). Once stopped, this one's points nowhere.
        self._server._lock_path = f"{self.uri.removeprefix('unix:')}.stopped"


def is_connection_lost(exc: BaseException) -> bool:
    """The server went away (died, was stopped, its socket vanished) rather than refused a request."""
    import grpc
    from pymilvus.exceptions import MilvusException

    if isinstance(exc, grpc.RpcError):
        return exc.code() == grpc.StatusCode.UNAVAILABLE
    if isinstance(exc, MilvusException):
        return exc.code in (2, grpc.StatusCode.UNAVAILABLE)  # 2: pymilvus Status.CONNECT_FAILED
    return False


def is_starting_up(exc: BaseException) -> bool:
    """A Lite server that was just started refusing a call because its storage is not set up yet (an upstream
    race, seen here under load: create_collection failed with `Mmap manager has not been init`): try again."""
    from pymilvus.exceptions import MilvusException

    return isinstance(exc, MilvusException) and "Mmap manager has not been init" in str(exc)


def is_empty_bm25_error(exc: BaseException) -> bool:
    """BM25 search on a collection without rows (Lite divides by a zero average length)."""
    from pymilvus.exceptions import MilvusException

    return isinstance(exc, MilvusException) and "NaN or Inf" in str(exc)


def is_racing_bm25_error(exc: BaseException) -> bool:
    """BM25 search while another writer deletes rows: Lite 2.5.1's corpus statistics are briefly behind the rows,
    a term's weight comes out negative and the search is refused ("Invalid sparse row: negative value"). The same
    search a moment later succeeds (reproduced by searching during repeated replacements on a loaded machine)."""
    from pymilvus.exceptions import MilvusException

    return isinstance(exc, MilvusException) and "Invalid sparse row" in str(exc)

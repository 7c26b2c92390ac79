"""The store host: one small process that owns a Milvus Lite file and serves it to every workbench process.

Milvus Lite 2.5.1 lets one process open a `.db` file. In shared mode (the default) no workbench process
opens it: the first one that needs it starts this host, detached, and every process (the app, the HTTP
API, CLI commands) connects to it as a client, over the same gRPC-on-a-Unix-socket path an in-process
Milvus Lite uses. Files beside the database (`.<name>.` + suffix):

- `owner`    our lock on the database (see lite.lock), held by the host: "pid N (store host)".
- `host`     the endpoint, JSON: the host's and Lite server's identity and socket URI. Written once the
             server answers; removed when the host stops. A file naming a dead host is stale.
- `clients`  every client holds a shared flock on it while connected. The host polls for an exclusive
             one: when it gets it for `idle` seconds in a row, nobody is connected and it stops, removing
             the endpoint while it still holds the exclusive lock, so no client can attach to a host that
             is going away (a client takes its shared lock first, then reads the endpoint). With `idle` 0
             it stops at the first poll without clients (no lingering: scripts, tests).
- `start`    serialises starting a host, so two clients starting at once start one.
- `host.log` the host's and Lite's stderr (owner-only).

The Lite server exits by itself when the host dies (it waits on a lock the host holds), so killing the
host never leaves a server behind; a new host also stops a previous host's server that is still exiting.
A host whose database file is gone (deleted, its folder deleted, or replaced by another file) stops at its
next poll, clients or not: a test's or a script's temporary data dir leaves no host behind once deleted.
Run as `python -m rag_core.store.lite.host DB [--idle SECONDS]`; it answers its starter on stdout with one
JSON line (`{"ok": ...}` or `{"error": ..., "kind": ...}`) and then detaches from it.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ...errors import RagError, StoreLockedError
from . import file as lite_file
from . import lock as lite_lock
from .processes import ProcessId, start_ticks
from .server import start_server

POLL_S = 0.5
ENDPOINT_VERSION = 1


@dataclass(frozen=True)
class HostFiles:
    db: Path

    def _beside(self, suffix: str) -> Path:
        return self.db.parent / f".{self.db.name}.{suffix}"

    @property
    def endpoint(self) -> Path:
        return self._beside("host")

    @property
    def clients(self) -> Path:
        return self._beside("clients")

    @property
    def start(self) -> Path:
        return self._beside("start")

    @property
    def log(self) -> Path:
        return self._beside("host.log")


@dataclass(frozen=True)
class Endpoint:
    """What a client needs to reach a running host, and to tell whether it still runs."""

    uri: str  # unix:/tmp/...sock
    host_pid: int
    host_start: int
    server_pid: int
    server_start: int
    idle_s: float
    started_at: float  # time.time()
    version: int = ENDPOINT_VERSION

    @property
    def host(self) -> ProcessId:
        return ProcessId(self.host_pid, self.host_start)

    @property
    def server(self) -> ProcessId:
        return ProcessId(self.server_pid, self.server_start)

    def alive(self) -> bool:
        return self.host.alive() and self.server.alive()


def read_endpoint(files: HostFiles) -> Endpoint | None:
    try:
        data = json.loads(files.endpoint.read_text(encoding="utf-8"))
        return Endpoint(**data) if data.get("version") == ENDPOINT_VERSION else None
    except (OSError, ValueError, TypeError):
        return None


def _write_endpoint(files: HostFiles, endpoint: Endpoint) -> None:
    partial = files.endpoint.with_name(files.endpoint.name + ".partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(asdict(endpoint), fh)
    os.replace(partial, files.endpoint)  # readers see no file or a whole one


def _remove_endpoint_if_ours(files: HostFiles) -> None:
    current = read_endpoint(files)
    if current is not None and current.host_pid == os.getpid():
        files.endpoint.unlink(missing_ok=True)


def _stop_leftover_server(files: HostFiles) -> None:
    """A host killed a moment ago leaves its Lite server running for ~1-2 s (until it notices): wait for
    it, then kill it, so two servers never serve one file."""
    stale = read_endpoint(files)
    if stale is None or stale.host.alive():
        return
    deadline = time.monotonic() + 5
    while stale.server.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    if stale.server.alive():
        os.kill(stale.server_pid, signal.SIGKILL)
    files.endpoint.unlink(missing_ok=True)


def _acquire(db: Path, wait_s: float = 15.0) -> None:
    """The owner lock; a host that is still stopping (after `host stop`) gets a few seconds to finish."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            lite_lock.acquire(db, role=lite_lock.HOST_ROLE)
            return
        except StoreLockedError as exc:
            if lite_lock.HOST_ROLE not in getattr(exc, "holder", "") or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _kind(exc: RagError) -> str:
    if isinstance(exc, StoreLockedError):
        return "locked"
    if isinstance(exc, lite_file.DamagedDatabase):
        return "damaged"
    if isinstance(exc, lite_file.NotALiteDatabase):
        return "foreign"
    return "error"


def _answer(message: dict[str, Any]) -> None:
    """One line to the starter, then stdout goes nowhere (the starter stops reading; a write to a closed
    pipe must not kill the host)."""
    try:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()
    except (BrokenPipeError, OSError):
        pass
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _log(message: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} store host pid {os.getpid()}: {message}", file=sys.stderr,
          flush=True)


def serve(db: Path, idle_s: float, collection: str = "biz") -> int:
    files = HostFiles(db)
    stopping: list[str] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, _frame: stopping.append(signal.Signals(signum).name))
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        _acquire(db)
        _stop_leftover_server(files)
        server = start_server(db, collection, f"in {files.log}")
    except RagError as exc:
        _log(f"not started: {exc}")
        _answer({"error": str(exc), "kind": _kind(exc)})
        return 2
    endpoint = Endpoint(uri=server.uri, host_pid=os.getpid(), host_start=ProcessId.current().start,
                        server_pid=server.pid, server_start=start_ticks(server.pid), idle_s=idle_s,
                        started_at=time.time())
    _write_endpoint(files, endpoint)
    _log(f"serving {db} on {server.uri} (Milvus Lite pid {server.pid}); stops {idle_words(idle_s)}")
    _answer({"ok": True, "endpoint": asdict(endpoint)})
    reason = _wait(files, server, idle_s, stopping, _file_id(db))
    _log(f"stopping: {reason}")
    _remove_endpoint_if_ours(files)
    server.stop()
    lite_lock.release(db)
    return 0 if reason != "the Milvus Lite server exited" else 1


def idle_words(idle_s: float) -> str:
    """When a host with this `milvus.host-idle` stops, in words."""
    return "when its last client leaves" if idle_s == 0 else f"after {idle_s:g} s without clients"


def _file_id(path: Path) -> tuple[int, int] | None:
    """Which file `path` is (device, inode), or None when there is none."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


def _wait(files: HostFiles, server: Any, idle_s: float, stopping: list[str], db_id: tuple[int, int] | None) -> str:
    """Until a signal, the Lite server's death, the database file's disappearance (`db_id`: the file served),
    or `idle_s` seconds in a row without clients. Returns the reason; for an idle stop, the clients lock is
    still held (exclusively) when it returns."""
    clients = os.open(files.clients, os.O_RDWR | os.O_CREAT, 0o600)
    idle_since: float | None = None
    while True:
        if stopping:
            return f"signal {stopping[0]}"
        if not server.running():
            return "the Milvus Lite server exited"
        if db_id is None or _file_id(files.db) != db_id:
            # Nobody can reach what it serves any more (a temporary data dir deleted, the file replaced).
            return f"the database file {files.db} is gone"
        try:
            fcntl.flock(clients, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            idle_since = None
        else:
            now = time.monotonic()
            idle_since = idle_since if idle_since is not None else now
            if now - idle_since >= idle_s:
                # Keep the exclusive lock: clients wait on their shared lock until the endpoint is gone
                # and the file is released; it is freed when this process exits.
                return f"no clients for {idle_s:g} s" if idle_s else "its last client left"
            fcntl.flock(clients, fcntl.LOCK_UN)
        time.sleep(POLL_S)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag_core.store.lite.host",
                                     description="Serve one Milvus Lite database to every workbench process.")
    parser.add_argument("db", help="the Milvus Lite .db file")
    parser.add_argument("--idle", type=float, default=300.0,
                        help="stop after this many seconds without clients (0: when the last one leaves)")
    parser.add_argument("--collection", default="biz", help="named in the rebuild command of damage messages")
    args = parser.parse_args(argv)
    return serve(Path(args.db).absolute(), args.idle, args.collection)


if __name__ == "__main__":
    sys.exit(main())

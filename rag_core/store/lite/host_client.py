"""Reaching the store host (see lite.host): attach to the running one, or start it; status and stop.

A client first takes its shared lock on the `clients` file (a host that is stopping holds it
exclusively until it has let go of the database), then reads the endpoint. No endpoint, or one naming
a dead host: it starts a host itself, under the `start` lock so that two clients starting together
start one. The shared lock is held for as long as the client is connected; it is what keeps the host
from stopping.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import rag_core

from ...errors import StoreError, StoreLockedError
from . import file as lite_file
from .host import Endpoint, HostFiles, idle_words, read_endpoint
from .processes import program_of

START_TIMEOUT_S = 90.0  # a cold start on a loaded 2-core machine takes 1-3 s; this is the give-up point
STOP_WAIT_S = 10.0  # a host stops within a poll (0.5 s) and Lite's server within ~2 s of it
LOG_LIMIT = 1 << 20  # the host log is started afresh beyond this size
# The host needs no secrets: it gets a minimal environment, not the caller's (which may hold API keys).
_ENV_KEPT = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ")
_children: list[subprocess.Popen] = []  # hosts this process started, reaped when they exit


@dataclass
class Attachment:
    """This process's connection to a host: its endpoint, and the shared lock that keeps it running."""

    files: HostFiles
    idle_s: float
    collection: str
    endpoint: Endpoint
    _fd: int = field(repr=False, default=-1)

    @property
    def uri(self) -> str:
        return self.endpoint.uri

    def describe(self) -> str:
        return f"the store host (pid {self.endpoint.host_pid})"

    def alive(self) -> bool:
        return self.endpoint.alive()

    def reconnect(self) -> str:
        """After the connection was lost: the running host's URI, starting a new host if needed."""
        self.endpoint = _running_or_started(self.files, self.idle_s, self.collection)
        return self.endpoint.uri

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # releases the shared lock
            self._fd = -1
            if self.endpoint.idle_s == 0:
                self._wait_for_the_host()

    def _wait_for_the_host(self) -> None:
        """A host started with no lingering (`milvus.host-idle` = 0) stops when its last client has left, so the
        last one waits for it and its Lite server to exit: a command leaves nothing running when it returns. Not
        while other clients (this process's other stores included) keep it. (A host another process started
        with an idle time keeps it: this client does not wait.)"""
        deadline = time.monotonic() + STOP_WAIT_S
        while self.endpoint.host.alive() or self.endpoint.server.alive():
            if _clients(self.files) or time.monotonic() > deadline:
                return
            time.sleep(0.05)


def attach(db: Path, idle_s: float, collection: str = "biz") -> Attachment:
    files = HostFiles(db)
    fd = os.open(files.clients, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)  # waits while a host is stopping (it holds the lock exclusively)
        endpoint = _running_or_started(files, idle_s, collection)
    except BaseException:
        os.close(fd)
        raise
    return Attachment(files, idle_s, collection, endpoint, fd)


def _running_or_started(files: HostFiles, idle_s: float, collection: str) -> Endpoint:
    endpoint = read_endpoint(files)
    if endpoint is not None and endpoint.alive():
        return endpoint
    fd = os.open(files.start, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another client may be starting one right now
        endpoint = read_endpoint(files)
        if endpoint is not None and endpoint.alive():
            return endpoint
        return _start(files, idle_s, collection)
    finally:
        os.close(fd)


def _host_env() -> dict[str, str]:
    env = {name: os.environ[name] for name in _ENV_KEPT if name in os.environ}
    env["PYTHONPATH"] = str(Path(rag_core.__file__).resolve().parent.parent)  # the caller's rag_core
    return env


def _start(files: HostFiles, idle_s: float, collection: str) -> Endpoint:
    db = files.db
    lite_file.check(db, collection)  # say it here, without a process, when the file is to blame
    if files.log.exists() and files.log.stat().st_size > LOG_LIMIT:
        files.log.unlink()
    log = os.open(files.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "rag_core.store.lite.host", str(db), "--idle", f"{idle_s:g}", "--collection",
             collection],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, cwd=str(db.parent), env=_host_env(),
            start_new_session=True)  # not in the terminal's process group: Ctrl-C on the app spares it
    finally:
        os.close(log)
    _children[:] = [child for child in _children if child.poll() is None] + [process]
    assert process.stdout is not None
    try:
        ready, _, _ = select.select([process.stdout], [], [], START_TIMEOUT_S)
        line = process.stdout.readline() if ready else b""
    finally:
        process.stdout.close()
    if not line:
        if process.poll() is None:
            process.kill()
        raise StoreError(f"The store host for {db} did not start within {START_TIMEOUT_S:g} s; its messages "
                         f"are in {files.log}.")
    answer = json.loads(line)
    if "error" in answer:
        process.wait(timeout=30)
        kind = answer.get("kind")
        error = {"locked": StoreLockedError, "damaged": lite_file.DamagedDatabase,
                 "foreign": lite_file.NotALiteDatabase}.get(kind, StoreError)
        raise error(answer["error"])
    return Endpoint(**answer["endpoint"])


# ---------------------------------------------------------------------------------------- status, stop
@dataclass(frozen=True)
class HostStatus:
    endpoint: Endpoint
    clients: tuple[str, ...]  # "pid N (program)" of every attached process (Linux), else ()

    def describe(self) -> str:
        age = time.time() - self.endpoint.started_at
        attached = ", ".join(self.clients) if self.clients else "none"
        return (f"store host pid {self.endpoint.host_pid}, Milvus Lite pid {self.endpoint.server_pid}, up "
                f"{age:.0f} s, stops {idle_words(self.endpoint.idle_s)}; clients: {attached}")


def _clients(files: HostFiles) -> tuple[str, ...]:
    """Processes holding a shared flock on the clients file, from /proc/locks."""
    try:
        inode = str(files.clients.stat().st_ino)
        with open("/proc/locks", encoding="ascii") as fh:
            pids = sorted({int(parts[4]) for parts in (line.split() for line in fh)
                           if len(parts) > 5 and parts[1] == "FLOCK" and parts[3] == "READ"
                           and parts[5].rsplit(":", 1)[-1] == inode})
    except (OSError, ValueError):
        return ()
    return tuple(f"pid {pid} ({program_of(pid)})" for pid in pids)


def status(db: Path) -> HostStatus | None:
    files = HostFiles(db)
    endpoint = read_endpoint(files)
    if endpoint is None or not endpoint.alive():
        return None
    return HostStatus(endpoint, _clients(files))


def stop(db: Path, timeout: float = 15.0) -> HostStatus | None:
    """Stop the running host (clients that are still attached start a new one on their next request).
    Returns what was running, or None."""
    running = status(db)
    if running is None:
        return None
    try:
        os.kill(running.endpoint.host_pid, signal.SIGTERM)
    except ProcessLookupError:
        return running
    deadline = time.monotonic() + timeout
    while running.endpoint.host.alive() or running.endpoint.server.alive():
        if time.monotonic() > deadline:
            raise StoreError(f"The store host pid {running.endpoint.host_pid} did not stop within {timeout:g} s.")
        time.sleep(0.05)
    return running


def stop_started(timeout: float = 15.0) -> int:
    """Stop the hosts this process started that still run (test sessions, before they exit)."""
    stopped = 0
    for child in _children:
        if child.poll() is None:
            child.terminate()
            try:
                child.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait(timeout=timeout)
            stopped += 1
    _children.clear()
    return stopped


def stop_all_under(folder: Path) -> int:
    """Stop every host serving a database under `folder` (test sessions clean up their temporary dirs)."""
    stopped = 0
    for endpoint in folder.rglob(".*.db.host"):
        if stop(endpoint.parent / endpoint.name[1:-len(".host")]) is not None:
            stopped += 1
    return stopped

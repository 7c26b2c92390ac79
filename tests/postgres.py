"""A real PostgreSQL for the tests, started from Debian's `postgresql` package: initdb into a temporary folder,
pg_ctl on a free loopback port with its unix socket in that folder, stopped at the end of the session.

Each pytest-xdist worker starts its own (its own folder and port); each test gets a database of its own
(`fresh_database`), so tests never see each other's rows. initdb refuses to run as root: as root, initdb and
pg_ctl run as the `postgres` user that the package creates (runuser), in a folder that user owns, outside
pytest's root-only temporary folders. Authentication is `trust` on loopback: a throw-away server.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import psycopg

INSTALL_HINT = "apt-get install postgresql"
START_TIMEOUT_S = 120
SUPERUSER = "postgres"


def binaries() -> Path:
    """The bin folder of Debian's newest installed PostgreSQL; a clear failure when there is none."""
    found = [Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/initdb")]
    if not found:
        raise RuntimeError(f"PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): `{INSTALL_HINT}` "
                           "(.ci/run does it); the SQL stores' tests run against a real server.")
    return max(found, key=lambda p: _version(p.parent.name))


def _version(name: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", name)) or (0,)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """One throw-away server: `start()`, `url` (its `postgres` database), `fresh_database()`, `stop()`."""

    def __init__(self) -> None:
        self.bin = binaries()
        self.folder = Path(tempfile.mkdtemp(prefix="rag-test-postgres-"))
        self.data = self.folder / "data"
        self.port = free_port()
        self.started = False

    @property
    def url(self) -> str:
        return self.database_url("postgres")

    def database_url(self, name: str) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{name}"

    def start(self) -> PostgresServer:
        as_root = os.geteuid() == 0
        if as_root:
            shutil.chown(self.folder, SUPERUSER, SUPERUSER)
        self._run([str(self.bin / "initdb"), "-D", str(self.data), "-U", SUPERUSER, "-A", "trust", "-E", "UTF8",
                   "--locale=C", "--no-sync"])
        options = (f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        self._run([str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.folder / "server.log"),
                   "-o", options, "-w", "-t", str(START_TIMEOUT_S), "start"])
        self.started = True
        self._wait()
        return self

    def _wait(self) -> None:
        deadline, last = time.monotonic() + START_TIMEOUT_S, None
        while time.monotonic() < deadline:
            try:
                with psycopg.connect(self.url, connect_timeout=5):
                    return
            except psycopg.OperationalError as error:
                last = error
                time.sleep(0.2)
        raise RuntimeError(f"PostgreSQL on port {self.port} did not accept connections within {START_TIMEOUT_S} s: "
                           f"{last}\n{self.log()}")

    def fresh_database(self) -> str:
        """A new, empty database's URL."""
        name = f"t_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.database_url(name)

    def drop_database(self, url: str) -> None:
        name = url.rsplit("/", 1)[1]
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        try:
            if self.started:
                self._run([str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"],
                          check=False)
                self.started = False
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def log(self) -> str:
        try:
            return (self.folder / "server.log").read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def _run(self, command: list[str], check: bool = True) -> None:
        if os.geteuid() == 0:
            command = ["runuser", "-u", SUPERUSER, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=START_TIMEOUT_S + 60,
                              cwd=self.folder, check=False)
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}\n"
                               f"{self.log()}")

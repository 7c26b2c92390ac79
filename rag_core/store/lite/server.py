"""Milvus Lite's server run by this process: the store host's (see lite.host), and that of exclusive mode's stores
(see lite.connection), shared by this process's stores on one file.

Its own module so that the host and the connection both use it without importing each other.
"""

from __future__ import annotations

import threading
from pathlib import Path

from ...errors import StoreError
from . import file as lite_file
from . import lock as lite_lock
from .internals import LiteServer

_servers: dict[str, tuple[LiteServer, int]] = {}  # resolved path -> (server, users in this process)
_servers_guard = threading.Lock()


def start_server(db: Path, collection: str, messages: str = "on stderr above") -> LiteServer:
    """Milvus Lite's server for `db`, run by this process (which holds our lock on it): the file is
    checked first, and a failure says why (another program has it, the file is damaged) when it can."""
    lite_file.check(db, collection)
    server = LiteServer(db)
    if not server.start():
        lite_lock.probe_lite_lock(db)  # another program took Lite's own lock
        raise lite_file.diagnose(db, collection) or StoreError(
            f"Milvus Lite could not start for {db}; its messages are {messages}.")
    return server


def serves_here(db: Path) -> bool:
    with _servers_guard:
        return str(db.resolve()) in _servers


class OwnServer:
    """Milvus Lite's server run by this process (exclusive mode), shared by its stores on one file."""

    def __init__(self, db: Path, collection: str) -> None:
        self.db, self.collection, self._key = db, collection, str(db.resolve())
        lite_lock.acquire(db)
        try:
            with _servers_guard:
                server, users = _servers.get(self._key) or (start_server(db, collection), 0)
                _servers[self._key] = (server, users + 1)
        except BaseException:
            lite_lock.release(db)
            raise
        self.uri = server.uri

    def describe(self) -> str:
        return "Milvus Lite's server (in this process)"

    def alive(self) -> bool:
        with _servers_guard:
            return self._key in _servers and _servers[self._key][0].running()

    def reconnect(self) -> str:
        with _servers_guard:
            server, users = _servers[self._key]
            if not server.running():
                server.stop()
                server = start_server(self.db, self.collection)
                _servers[self._key] = (server, users)
        self.uri = server.uri
        return self.uri

    def close(self) -> None:
        with _servers_guard:
            server, users = _servers.pop(self._key)
            if users > 1:
                _servers[self._key] = (server, users - 1)
            else:
                server.stop()  # so another process can open the file after us
        lite_lock.release(self.db)

"""Opening and closing the Milvus client: Milvus Lite (a local `.db` file) or a server by URI.

Milvus Lite lets one process open a file, so there are two ways to reach one (`milvus.lite-mode`):
- `shared` (the default): through the store host, a small process that owns the file and serves it to
  every workbench process (app, HTTP API, CLI) at once (see lite.host). The first process that needs it
  starts it; it stops after `milvus.host-idle` seconds without clients (0: when the last one leaves).
- `exclusive`: this process runs Milvus Lite's server itself (lite.server), behind our lock (lite.lock);
  another process gets a clear "already open" message. Tests use it (no process to start per temporary database).
Both speak gRPC over a Unix socket to Lite's server, as pymilvus's own embedded mode does. A process
that already serves a file itself (exclusive) serves its shared-mode stores on that file too.

The client is wrapped so that a lost connection (the server or the host died, was stopped, or stopped
after idling) becomes one clear `StoreUnavailableError`, after reconnecting: reads are retried once on
the new connection, writes are not (the caller's versioned write leaves the previous version intact,
and the next write works). Before Lite opens a file it is checked (lite.file): another program's SQLite
file is refused untouched, a damaged one is reported with what to do.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ...errors import StoreError, StoreUnavailableError
from .internals import LOCAL_GRPC_OPTIONS, is_connection_lost, is_starting_up, refuse_if_forbidden
from .server import OwnServer, serves_here

MODES = ("shared", "exclusive")
# A Lite server that was just started listens before it is ready: on a busy machine (a full test run) its first
# calls were seen to fail, as unavailable or as not set up yet (lite.internals.is_starting_up). Such calls are
# tried again while the server runs, this long.
CONNECT_WAIT_S = 30.0
# How many times a server that died again while being reconnected to is started once more.
RESTARTS = 2
# MilvusClient methods that only read, safe to send again after reconnecting.
_READS = frozenset({"query", "search", "hybrid_search", "get", "has_collection", "describe_collection",
                    "list_collections", "load_collection", "get_load_state", "get_collection_stats",
                    "list_indexes", "describe_index", "query_iterator", "search_iterator"})


@dataclass(frozen=True)
class LiteOptions:
    """How to reach a Milvus Lite file (ignored for a server URI)."""

    # Settings say `shared` by default (bootstrap passes them); a store built directly opens the file itself.
    mode: str = "exclusive"
    idle_s: float = 300.0  # shared: the host stops after this long without clients (0: when the last one leaves)
    collection: str = "biz"  # named in the rebuild command of a damaged-file message

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise StoreError(f"milvus.lite-mode = {self.mode!r} must be one of: {', '.join(MODES)}.")


def is_lite(uri: str) -> bool:
    return "://" not in uri


class _Link(Protocol):
    """Where the Lite server is and how to find it again (the store host, or this process's own)."""

    @property
    def uri(self) -> str: ...

    def describe(self) -> str: ...

    def alive(self) -> bool: ...

    def reconnect(self) -> str: ...

    def close(self) -> None: ...


# ---------------------------------------------------------------------------------------- the client
def _milvus_client(uri: str, **kwargs: Any) -> Any:
    from pymilvus import MilvusClient

    # pymilvus logs every failed RPC with a traceback (and a harmless warning per iterator on Lite);
    # this store raises its own messages instead.
    logging.getLogger("pymilvus").setLevel(logging.CRITICAL)
    return MilvusClient(uri=uri, **kwargs)


class Client:
    """A MilvusClient that turns a lost connection into StoreUnavailableError, reconnecting first when
    it can (see the module docstring). Every other attribute is the MilvusClient's."""

    def __init__(self, what: str, connect: Any, link: _Link | None = None) -> None:
        self._what = what  # "the knowledge base data/milvus.db", for messages
        self._connect = connect  # uri -> MilvusClient
        self._link = link
        self._client = self._connected(link.uri) if link is not None else connect("")
        self._loaded: set[str] = set()
        self._generation = 0
        self._guard = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # not set yet (during __init__), or private to pymilvus
            raise AttributeError(name)
        attr = getattr(self._client, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            generation = self._generation
            try:
                result = self._when_ready(name, args, kwargs)
            except Exception as exc:
                # The error says the connection is gone, or it says something else (a reset stream, a
                # cancelled call) while the server is in fact gone: either way, reconnect.
                if not is_connection_lost(exc) and (self._link is None or self._link.alive()):
                    raise
                self._reconnect(generation, name, exc)
                if name not in _READS:
                    raise StoreUnavailableError(
                        f"The connection to {self._what} was lost during a write ({name}): "
                        f"{self._link.describe() if self._link else 'the server'} stopped. The write did not "
                        "complete; what was committed before is intact and a document being replaced keeps its "
                        "previous version. The store is reachable again: run the command again.") from None
                result = self._when_ready(name, args, kwargs)
            if name == "load_collection":
                self._loaded.add(args[0] if args else kwargs["collection_name"])
            return result

        return call

    def _reconnect(self, generation: int, name: str, exc: Exception) -> None:
        with self._guard:
            if generation != self._generation:
                return  # another thread reconnected meanwhile
            if self._link is None:
                raise StoreUnavailableError(f"{self._what} is unreachable ({name} failed: "
                                            f"{str(exc)[:200]}). Check that the server is running.") from None
            try:
                self._client.close()
            except Exception:  # noqa: BLE001 - the old connection is gone anyway
                pass
            try:
                client = self._reconnected()
                for collection in sorted(self._loaded):  # a new server has nothing loaded
                    client.load_collection(collection)
            except StoreError as again:
                raise StoreUnavailableError(f"The connection to {self._what} was lost and could not be made "
                                            f"again: {again}") from None
            except Exception as again:  # noqa: BLE001
                raise StoreUnavailableError(
                    f"The connection to {self._what} was lost and could not be made again "
                    f"({type(again).__name__}: {str(again)[:200]}).") from None
            self._client, self._generation = client, generation + 1

    def _reconnected(self) -> Any:
        """A client on the link's server, started again if needed; a server that dies while this connects
        (seen once under a full test run's load) is started again, up to RESTARTS times."""
        link = self._link
        assert link is not None
        restarts = 0
        while True:
            try:
                return self._connected(link.reconnect())
            except Exception as exc:
                restarts += 1
                if restarts > RESTARTS or not is_connection_lost(exc) or link.alive():
                    raise

    def _when_ready(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The client's call, again while a Lite server that just started is still setting up."""
        return _retried(lambda: getattr(self._client, name)(*args, **kwargs),
                        lambda exc: self._link is not None and is_starting_up(exc))

    def _connected(self, uri: str) -> Any:
        """A client on the Lite server at `uri`, once the server answers (while it runs)."""
        link = self._link
        assert link is not None
        return _retried(lambda: self._connect(uri), lambda exc: is_connection_lost(exc) and link.alive())

    def close(self) -> None:
        self._client.close()
        if self._link is not None:
            self._link.close()


def _retried(attempt: Callable[[], Any], transient: Callable[[Exception], bool]) -> Any:
    """`attempt()`, again every 0.1 s while it fails with a `transient` error, for up to CONNECT_WAIT_S."""
    deadline = time.monotonic() + CONNECT_WAIT_S
    while True:
        try:
            return attempt()
        except Exception as exc:
            if not transient(exc) or time.monotonic() > deadline:
                raise
        time.sleep(0.1)


def _loopback(uri: str) -> bool:
    from urllib.parse import urlparse

    return (urlparse(uri).hostname or "") in ("127.0.0.1", "localhost", "::1")


def connect(uri: str, token: str, timeout: float, lite: LiteOptions | None = None) -> Client:
    from pymilvus.exceptions import MilvusException

    if not is_lite(uri):
        from ...config import redact_uri

        # A server on this machine gets no keepalive pings either (see LOCAL_GRPC_OPTIONS); a remote one
        # keeps pymilvus's, which find a connection that died on the way (a NAT, a firewall).
        options = {"grpc_options": LOCAL_GRPC_OPTIONS} if _loopback(uri) else {}
        try:
            return Client(f"Milvus at {redact_uri(uri)}",
                          lambda _: _milvus_client(uri, token=token, timeout=timeout, **options))
        except MilvusException as exc:
            raise StoreError(f"Could not connect to Milvus at {redact_uri(uri)}: {exc.message}. "
                             "Check MILVUS_URI / MILVUS_TOKEN and that the server is running.") from None

    lite = lite or LiteOptions()
    path = Path(uri)
    if path.suffix != ".db":
        raise StoreError(f"milvus.uri {uri!r}: a Milvus Lite file must end in .db, "
                         "or use http://host:19530 for a server.")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"Cannot create the folder of {path}: {exc.strerror}.") from None
    refuse_if_forbidden(path)  # here as well: the store host (shared mode) starts Lite without this environment
    path = path.absolute()
    if lite.mode == "exclusive" or serves_here(path):  # this process already serves it: join that
        link: _Link = OwnServer(path, lite.collection)
    else:
        from .host_client import attach

        link = attach(path, lite.idle_s, lite.collection)
    try:
        return Client(f"the knowledge base {path}",
                      lambda address: _milvus_client(address, grpc_options=LOCAL_GRPC_OPTIONS), link)
    except BaseException:
        link.close()
        raise


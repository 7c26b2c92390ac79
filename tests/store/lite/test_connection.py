"""store.lite.connection's client: connecting to a Lite server that listens but does not answer yet."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pymilvus.exceptions import MilvusException

from rag_core.errors import StoreUnavailableError
from rag_core.store.lite import connection
from rag_core.store.lite.connection import Client, _milvus_client
from rag_core.store.lite.internals import LOCAL_GRPC_OPTIONS, LiteServer


class Link:
    """A link whose server is said to run (it is starting) and is at `uri`."""

    def __init__(self, uri: str, alive: bool = True) -> None:
        self.uri, self._alive = uri, alive

    def alive(self) -> bool:
        return self._alive

    def reconnect(self) -> str:
        return self.uri

    def describe(self) -> str:
        return "a test server"

    def close(self) -> None:
        pass


def connect(address: str):
    return _milvus_client(address, grpc_options=LOCAL_GRPC_OPTIONS)


class CountingConnect:
    """`connect`, counting its attempts; `then(n)` runs after the n-th attempt failed."""

    def __init__(self, then: dict[int, Callable[[], None]] | None = None) -> None:
        self.attempts = 0
        self.then = then or {}

    def __call__(self, address: str):
        self.attempts += 1
        try:
            return connect(address)
        except Exception:
            if self.attempts in self.then:
                self.then[self.attempts]()
            raise


@pytest.mark.milvus  # starts Milvus Lite
def test_a_server_that_answers_late_is_waited_for_while_it_runs(tmp_path: Path) -> None:
    server = LiteServer(tmp_path / "milvus.db")  # its socket's path is chosen now; nobody listens there yet
    starter = threading.Thread(target=server.start)
    counting = CountingConnect(then={1: starter.start})  # it starts once the first attempt has failed
    try:
        client = Client("the knowledge base t.db", counting, Link(server.uri))
        assert counting.attempts >= 2  # the first attempt failed, and was tried again
        assert client.list_collections() == []
        client._client.close()
    finally:
        if starter.ident is not None:
            starter.join()
        server.stop()


def test_a_server_that_does_not_run_is_not_waited_for(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(connection, "CONNECT_WAIT_S", 60.0)
    server = LiteServer(tmp_path / "milvus.db")  # never started
    counting = CountingConnect()
    with pytest.raises(MilvusException, match="Fail connecting"):
        Client("the knowledge base t.db", counting, Link(server.uri, alive=False))
    assert counting.attempts == 1  # not tried again


def test_the_wait_is_bounded(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(connection, "CONNECT_WAIT_S", 1.0)
    server = LiteServer(tmp_path / "milvus.db")  # never started, though the link says it runs
    counting = CountingConnect()
    started = time.monotonic()
    with pytest.raises(MilvusException, match="Fail connecting"):  # it gives up (this test ends)
        Client("the knowledge base t.db", counting, Link(server.uri))
    assert counting.attempts >= 2 and time.monotonic() - started >= 1.0  # after trying for CONNECT_WAIT_S


# The error of the upstream race (pymilvus issue 2981), as a just-started Lite server answered create_collection here.
NOT_SET_UP = MilvusException(code=2000, message='Assert "init_flag_ == true"  => Mmap manager has not been init. at '
                             '/workspace/milvus-lite/thirdparty/milvus/internal/core/src/storage/MmapManager.h:96\n'
                             ': segcore error')


class StartingServer:
    """pymilvus's client on a server that answers `failures` calls as not set up yet, then works."""

    def __init__(self, failures: int, error: Exception = NOT_SET_UP) -> None:
        self.failures, self.error, self.calls = failures, error, 0

    def create_collection(self, name: str) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return f"created {name}"


def test_a_call_the_server_is_not_set_up_for_yet_is_tried_again() -> None:
    server = StartingServer(failures=3)
    client = Client("the knowledge base t.db", lambda _: server, Link("unix:/nowhere"))
    assert client.create_collection("biz") == "created biz" and server.calls == 4


def test_other_errors_and_a_server_that_never_gets_ready_are_not_hidden(monkeypatch) -> None:
    other = StartingServer(failures=1, error=MilvusException(code=1100, message="collection not found"))
    with pytest.raises(MilvusException, match="collection not found"):
        Client("the knowledge base t.db", lambda _: other, Link("unix:/nowhere")).create_collection("biz")
    assert other.calls == 1
    monkeypatch.setattr(connection, "CONNECT_WAIT_S", 0.5)
    never = StartingServer(failures=10**6)
    with pytest.raises(MilvusException, match="Mmap manager has not been init"):
        Client("the knowledge base t.db", lambda _: never, Link("unix:/nowhere")).create_collection("biz")
    assert 2 <= never.calls < 100


LOST = MilvusException(code=2, message="Fail connecting to server on unix:/gone.sock")


class RestartingLink(Link):
    """A link whose server was lost; each restart gives a server at a new uri, the first `dying` of which die
    while the client connects to them."""

    def __init__(self, dying: int) -> None:
        super().__init__("unix:/first.sock")
        self.dying, self.restarts = dying, 0

    def reconnect(self) -> str:
        self.restarts += 1
        self.uri, self._alive = f"unix:/restart-{self.restarts}.sock", True
        return self.uri

    def connect(self, uri: str) -> object:
        if uri != "unix:/first.sock" and self.restarts <= self.dying:
            self._alive = False  # this server died before it answered
            raise LOST
        return Answering(lost=uri == "unix:/first.sock")


class Answering:
    def __init__(self, lost: bool) -> None:
        self.lost = lost

    def query(self, name: str) -> str:
        if self.lost:
            raise LOST
        return f"rows of {name}"

    def close(self) -> None:
        pass


def test_a_server_that_dies_while_being_reconnected_to_is_started_again_a_bounded_number_of_times() -> None:
    link = RestartingLink(dying=connection.RESTARTS)
    client = Client("the knowledge base t.db", link.connect, link)
    assert client.query("biz") == "rows of biz"  # the read is tried again on the last restarted server
    assert link.restarts == connection.RESTARTS + 1
    link = RestartingLink(dying=connection.RESTARTS + 1)
    client = Client("the knowledge base t.db", link.connect, link)
    with pytest.raises(StoreUnavailableError, match="lost and could not be made again"):
        client.query("biz")
    assert link.restarts == connection.RESTARTS + 1

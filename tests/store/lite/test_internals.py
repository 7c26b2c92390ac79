"""What rag_core.store.lite.internals relies on in the pinned milvus-lite and pymilvus. When one of these
fails after a version change, the workbench's Milvus Lite handling must be checked again (see the module)."""

from __future__ import annotations

import gc
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from rag_core.errors import StoreError
from rag_core.store.lite import internals as lite_internals
from rag_core.store.lite.internals import LiteServer, is_connection_lost, is_empty_bm25_error
from tests.helpers import REPO, wait_until

pytestmark = pytest.mark.milvus  # opens Milvus Lite in its tests: not in `make test-unit`


def test_the_installed_versions_are_the_pinned_ones() -> None:
    lite, pymilvus = lite_internals.installed_versions()
    assert lite == lite_internals.PINNED_LITE, "milvus-lite changed: re-check lite_internals, then the pin"
    assert pymilvus.startswith("2.6."), "pymilvus changed: re-check lite_internals, then the range"
    pyproject = (REPO / "pyproject.toml").read_text()
    assert f'"milvus-lite=={lite_internals.PINNED_LITE}"' in pyproject and '"pymilvus>=2.6,<3"' in pyproject
    lite_internals.check_versions()


def test_other_versions_are_refused_with_the_install_command(monkeypatch) -> None:
    monkeypatch.setattr(lite_internals, "_checked", False)
    monkeypatch.setattr(lite_internals, "installed_versions", lambda: ("3.0.0", "3.1.0"))
    with pytest.raises(
        StoreError, match=r"found milvus-lite 3\.0\.0, pymilvus 3\.1\.0.*pip install 'milvus-lite==2\.5\.1'"
    ):
        lite_internals.check_versions()


def test_the_server_attributes_relied_on_exist(tmp_path: Path) -> None:
    from milvus_lite.server import Server

    server = Server(str(tmp_path / "x.db"))
    for name in ("init", "start", "stop", "uds_path", "_p", "_lock_path"):
        assert hasattr(server, name), name
    assert server.uds_path.startswith("unix:") and server._lock_path.endswith("/.x.db.lock")


def test_a_stopped_server_leaves_the_lock_file_of_the_next_one_alone(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    first = LiteServer(db)
    assert first.start()
    os.kill(first.pid, signal.SIGKILL)  # died (as in a reconnect), then stopped, then a new server on the file
    first.stop()
    second = LiteServer(db)
    assert second.start()
    try:
        lock = lite_internals.lite_lock_file(db)
        inode = lock.stat().st_ino
        del first  # milvus_lite's Server stops again when collected, removing its lock file by name
        gc.collect()
        assert lock.exists() and lock.stat().st_ino == inode
        assert second.running()
    finally:
        second.stop()
    assert not lite_internals.lite_lock_file(db).exists()  # its own lock file still goes when it stops


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    db = tmp_path_factory.mktemp("lite") / "m.db"
    lite = LiteServer(db)
    assert lite.start() and lite.running() and lite.pid > 0
    yield lite
    lite.stop()


def test_server_serves_on_a_unix_socket_and_empty_bm25_is_recognised(server: LiteServer) -> None:
    from pymilvus import DataType, Function, FunctionType, MilvusClient

    client = MilvusClient(uri=server.uri, grpc_options=lite_internals.LOCAL_GRPC_OPTIONS)
    schema = client.create_schema(auto_id=True)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("text", DataType.VARCHAR, max_length=200, enable_analyzer=True)
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_function(Function(name="bm25", function_type=FunctionType.BM25, input_field_names=["text"],
                                 output_field_names=["sparse"]))
    index = client.prepare_index_params()
    index.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
    client.create_collection("empty", schema=schema, index_params=index)
    with pytest.raises(Exception) as err:
        client.search("empty", data=["anything"], anns_field="sparse", limit=3)
    assert is_empty_bm25_error(err.value) and not is_connection_lost(err.value)
    client.close()


def test_the_server_stops_when_its_lock_holder_dies_and_clients_see_a_lost_connection(tmp_path: Path) -> None:
    """The host relies on this: kill the process that started Lite (even with SIGKILL) and Lite exits."""
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from rag_core.store.lite.internals import LiteServer
        server = LiteServer(__import__("pathlib").Path({str(tmp_path / 'm.db')!r}))
        assert server.start()
        print(server.uri, server.pid, flush=True)
        time.sleep(600)
    """)], cwd=REPO, stdout=subprocess.PIPE, text=True)
    uri, pid = holder.stdout.readline().split()
    from pymilvus import MilvusClient

    client = MilvusClient(uri=uri, grpc_options=lite_internals.LOCAL_GRPC_OPTIONS)
    assert client.list_collections() == []
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("Milvus Lite kept running after its lock holder died")
    with pytest.raises(Exception) as err:
        client.list_collections()
    assert is_connection_lost(err.value), repr(err.value)
    client.close()


class PingCounter:
    """A Unix-socket proxy in front of a gRPC server that notes when its client sends HTTP/2 PING frames."""

    def __init__(self, target: str, path: str) -> None:
        self.target, self.pings = target, []
        self.listener = socket.socket(socket.AF_UNIX)
        self.listener.bind(path)
        self.listener.listen(4)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.socket(socket.AF_UNIX)
            server.connect(self.target)
            threading.Thread(target=self._pump, args=(server, client), daemon=True).start()
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, count: bool = False) -> None:
        buffer, preface = b"", count
        try:
            while data := source.recv(65536):
                sink.sendall(data)
                if not count:
                    continue
                buffer += data
                if preface:  # the client's connection preface (24 bytes) comes before its frames
                    if len(buffer) < 24:
                        continue
                    buffer, preface = buffer[24:], False
                while len(buffer) >= 9 and len(buffer) >= 9 + int.from_bytes(buffer[:3], "big"):
                    kind, flags, length = buffer[3], buffer[4], int.from_bytes(buffer[:3], "big")
                    if kind == 6 and not flags & 1:  # PING, not an ACK
                        self.pings.append(time.monotonic())
                    buffer = buffer[9 + length:]
        except OSError:
            pass
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def test_local_clients_send_no_keepalive_pings_so_lite_never_sends_goaway(server: LiteServer, tmp_path: Path,
                                                                        capfd) -> None:
    """The cause of `GOAWAY ... too_many_pings` during long evaluations: pymilvus's 10 s keepalive pings,
    which Lite's server counts as strikes while a client idles. Our clients send none while idle."""
    from pymilvus import MilvusClient

    target = server.uri.removeprefix("unix:")
    default, ours = PingCounter(target, str(tmp_path / "d.sock")), PingCounter(target, str(tmp_path / "o.sock"))
    clients = [MilvusClient(uri=f"unix:{tmp_path / 'd.sock'}"),  # pymilvus's own options
               MilvusClient(uri=f"unix:{tmp_path / 'o.sock'}", grpc_options=lite_internals.LOCAL_GRPC_OPTIONS)]
    for client in clients:
        for _ in range(5):
            client.list_collections()
    idle_from = time.monotonic() + 2  # after the last answers' bandwidth probes
    # pymilvus's own options ping after 10 s idle: the idle stretch looked at lasts until that ping came, however
    # late a loaded machine makes it
    pinged = wait_until(lambda: [p for p in default.pings if idle_from < p], timeout=120, every=0.1)
    idle_to = time.monotonic()
    for client in clients:
        client.list_collections()
        client.close()
    assert pinged, "pymilvus's keepalive no longer pings?"
    assert not [p for p in ours.pings if idle_from < p < idle_to]
    assert "GOAWAY" not in capfd.readouterr().err

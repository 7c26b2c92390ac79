"""Fixtures of the store tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def milvus_server(tmp_path_factory, milvus):
    """A Milvus Lite server on a loopback TCP port: what a Milvus server looks like to our client.

    One per module, not per session: pymilvus shares one channel per (uri, token) across clients, and
    after a long idle spell the server answers its keep-alive pings with GOAWAY "too many pings", after
    which that cached channel fails every new client in the process (seen here after ~100 s idle)."""
    folder = tmp_path_factory.mktemp("server")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from milvus_lite.server import Server
        server = Server({str(folder / 'milvus.db')!r}, "127.0.0.1:{port}")
        assert server.init() and server.start()
        time.sleep(3600)
    """)], stdout=subprocess.DEVNULL, start_new_session=True)
    # Not a pipe: the server logs to stdout, and a pipe nobody reads fills up and stalls it.
    deadline = time.time() + 60
    while proc.poll() is None and time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    else:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail(f"the Milvus Lite server did not start (exit code {proc.poll()})")
    yield f"http://127.0.0.1:{port}"
    os.killpg(proc.pid, signal.SIGKILL)  # the wrapper and its `milvus` child
    proc.wait()

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


@pytest.fixture(scope="session")
def milvus_server(tmp_path_factory):
    """A Milvus Lite server on a loopback TCP port: what a Milvus server looks like to our client."""
    folder = tmp_path_factory.mktemp("server")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from milvus_lite.server import Server
        server = Server({str(folder / 'milvus.db')!r}, "127.0.0.1:{port}")
        assert server.init() and server.start()
        print("up", flush=True)
        time.sleep(3600)
    """)], stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout.readline().strip() == "up"
    deadline = time.time() + 30
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    yield f"http://127.0.0.1:{port}"
    os.killpg(proc.pid, signal.SIGKILL)  # the wrapper and its `milvus` child
    proc.wait()

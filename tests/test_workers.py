"""`serve --workers N` (rag_core.service.workers): N API processes on one port, each answering with its pid in
`X-Worker`; a worker killed after it acknowledged an upload and a rating loses neither (the other worker and its
replacement see them); Ctrl-C or SIGTERM stops every worker; a failure a person can fix is one line before any
worker starts."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from rag_core.service.workers import WORKER_HEADER
from tests.helpers import REPO

pytestmark = pytest.mark.milvus

START_S = 300  # a loaded 2-core machine starts Python, Milvus Lite and the embedder in each worker slowly
MARKER = "zebrafinch42 quokka"
DOC = "# Workers\n\nThe zebrafinch42 runbook: restart the quokka service when its queue grows.\n"


def env() -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith(("DASHSCOPE", "OPENAI", "MILVUS", "RAG_"))}
    out.update(RAG_MILVUS_HOST_IDLE="0", PYTHONUNBUFFERED="1")
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Workers:
    """`python -m rag_core serve --workers N` in a process of its own; its stderr is collected line by line."""

    def __init__(self, data: Path, count: int = 2, *, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([sys.executable, "-m", "rag_core", "--data-dir", str(data), "serve", "--port",
                                      str(self.port), "--workers", str(count), "--log-level", "warning"], cwd=REPO,
                                     env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_ready(self) -> None:
        deadline = time.monotonic() + START_S
        while not any(line.startswith("RAG workbench API on") for line in self.lines):
            assert self.proc.poll() is None, "\n".join(self.lines[-30:])
            assert time.monotonic() < deadline, "serve --workers did not start:\n" + "\n".join(self.lines[-30:])
            time.sleep(0.2)

    def worker_pids(self) -> set[int]:
        """The live worker processes: the supervisor's children that multiprocessing spawned (not its resource
        tracker, nor a store host it started)."""
        pids = set()
        for child in psutil.Process(self.proc.pid).children():
            try:
                if "spawn_main" in " ".join(child.cmdline()):
                    pids.add(child.pid)
            except psutil.Error:  # gone, or a zombie not reaped yet
                pass
        return pids

    def client_on(self, pid: int) -> httpx.Client:
        """A keep-alive client whose connection the worker `pid` accepted (new connections until one lands there)."""
        deadline = time.monotonic() + 120
        while True:
            client = httpx.Client(base_url=self.url, timeout=300)
            if client.get("/v1/health").headers.get(WORKER_HEADER) == str(pid):
                return client
            client.close()
            assert time.monotonic() < deadline, f"no connection reached worker {pid}"

    def on(self, pid: int, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """A request answered by worker `pid` (asserted: the connection stays with the worker that accepted it)."""
        client = self.client_on(pid)
        try:
            r = client.request(method, path, **kwargs)
        finally:
            client.close()
        assert r.headers.get(WORKER_HEADER) == str(pid), (r.headers.get(WORKER_HEADER), pid)
        return r

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            for child in psutil.Process(self.proc.pid).children(recursive=True):
                child.kill()
            self.proc.kill()
            return self.proc.wait()


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def workers(data: Path) -> Iterator[Workers]:
    w = Workers(data, 2)
    try:
        w.wait_ready()
        yield w
    finally:
        w.stop()


def found(w: Workers, pid: int) -> bool:
    r = w.on(pid, "GET", "/v1/search", params={"query": MARKER})
    assert r.status_code == 200, r.text
    return any("zebrafinch42" in hit["content"] for hit in r.json()["evidence"])


def rated_down(w: Workers, pid: int, trace_id: str) -> bool:
    r = w.on(pid, "GET", "/api/feedback")
    assert r.status_code == 200, r.text
    return any(t["traceId"] == trace_id and t["rating"] == "down" for t in r.json()["data"])


def test_a_worker_killed_after_it_answered_loses_no_upload_and_no_rating(workers: Workers) -> None:
    a, b = sorted(workers.worker_pids())
    assert len(workers.worker_pids()) == 2
    up = workers.on(a, "POST", "/api/upload", files={"file": ("workers.md", DOC.encode(), "text/markdown")})
    assert up.status_code == 200 and up.json()["data"]["chunks"] >= 1, up.text
    turn = workers.on(a, "POST", "/api/chat", json={"Id": "s-kill", "Question": "what about zebrafinch42?"})
    assert turn.status_code == 200 and turn.json()["data"]["success"], turn.text
    trace_id = turn.json()["data"]["traceId"]
    rated = workers.on(a, "POST", "/api/feedback", json={"traceId": trace_id, "rating": "down"})
    assert rated.status_code == 200, rated.text

    os.kill(a, signal.SIGKILL)
    assert found(workers, b) and rated_down(workers, b, trace_id)  # the other worker, at once
    deadline = time.monotonic() + START_S
    while not any("serves again" in line for line in workers.lines):
        assert time.monotonic() < deadline, "\n".join(workers.lines[-30:])
        time.sleep(0.2)
    assert any(f"(pid {a}) died (killed by SIGKILL)" in line for line in workers.lines), workers.lines
    (c,) = workers.worker_pids() - {b}
    assert c != a
    assert found(workers, c) and rated_down(workers, c, trace_id)  # and its replacement


def test_sigterm_stops_every_worker(workers: Workers) -> None:
    pids = workers.worker_pids()
    assert len(pids) == 2
    assert workers.stop(signal.SIGTERM) == 0
    assert not [pid for pid in pids if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"]
    assert workers.lines[-1] == "stopped"


def test_ctrl_c_stops_every_worker(workers: Workers) -> None:
    pids = workers.worker_pids()
    for pid in (workers.proc.pid, *pids):  # a terminal sends SIGINT to the whole foreground process group
        os.kill(pid, signal.SIGINT)
    assert workers.stop(signal.SIGINT) == 0
    assert not [pid for pid in pids if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"]


def test_a_port_in_use_is_one_line_and_no_worker_starts(data: Path) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        w = Workers(data, 2, port=held.getsockname()[1])
        assert w.proc.wait(timeout=START_S) != 0
    w.reader.join(timeout=30)
    assert len(w.lines) == 1 and "is already in use" in w.lines[0], w.lines


def test_a_knowledge_base_that_cannot_open_is_one_line_and_no_worker_starts(data: Path) -> None:
    data.mkdir(parents=True)
    (data / "milvus.db").write_bytes(b"SQLite format 3\x00" + b"\x00" * 4096)  # another program's file
    w = Workers(data, 2)
    assert w.proc.wait(timeout=START_S) != 0
    w.reader.join(timeout=30)
    assert len(w.lines) == 1 and "Traceback" not in w.lines[0] and "worker" not in w.lines[0], w.lines


def test_a_chat_session_is_shared_by_the_workers(workers: Workers) -> None:
    a, b = sorted(workers.worker_pids())
    up = workers.on(a, "POST", "/api/upload", files={"file": ("workers.md", DOC.encode(), "text/markdown")})
    assert up.status_code == 200, up.text
    first, follow_up = "How do I restart the quokka service?", "Which runbook says it?"
    one = workers.on(a, "POST", "/api/chat", json={"Id": "s-shared", "Question": first}).json()["data"]
    assert one["success"] and [t["rewrite"] for t in one["toolCalls"]] == [None]

    seen = workers.on(b, "GET", "/api/chat/session/s-shared").json()["data"]  # the other worker has turn 1
    assert seen["messagePairCount"] == 1 and seen["history"][0]["question"] == first
    two = workers.on(b, "POST", "/api/chat", json={"Id": "s-shared", "Question": follow_up}).json()["data"]
    assert two["success"] and two["sessionId"] == "s-shared" and two["turnIndex"] == 1
    (call,) = two["toolCalls"]  # the follow-up was searched with turn 1 as its history, on the other worker
    assert call["rewrite"]["outcome"] == "rewritten" and call["rewrite"]["turns"] == 2, call["rewrite"]
    assert "quokka" in call["rewrite"]["searched"]

    back = workers.on(a, "GET", "/api/chat/session/s-shared").json()["data"]
    assert [pair["question"] for pair in back["history"]] == [first, follow_up]
    assert workers.on(b, "POST", "/api/chat/clear", json={"Id": "s-shared"}).status_code == 200
    assert workers.on(a, "GET", "/api/chat/session/s-shared").json()["data"]["messagePairCount"] == 0
    assert workers.on(a, "GET", "/api/chat/session/s-unknown").status_code == 404

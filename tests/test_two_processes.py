"""Two processes on one data folder, as the README promises the app, `serve` and the CLI can share one: two `serve`
processes and CLI commands changing chunk edits, disables, added chunks and tags at the same moment lose none
of the changes they acknowledged (in searches, in `chunks history`, after `reindex` and a restart), and two
processes making knowledge bases whose names differ only by letter case never both succeed."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from rag_core.store.edits import ChunkEdits
from tests.helpers import REPO

pytestmark = pytest.mark.milvus

DOC = "manual.md"
SECTIONS = 44


def shared_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DASHSCOPE", "OPENAI", "MILVUS"))}
    env.update(RAG_MILVUS_LITE_MODE="shared", RAG_MILVUS_HOST_IDLE="0", PYTHONUNBUFFERED="1")
    env.pop("RAG_API_TOKEN", None)
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Serve:
    """`python -m rag_core serve` in a process of its own."""

    def __init__(self, data: Path) -> None:
        self.url = f"http://127.0.0.1:{free_port()}"
        self.proc = subprocess.Popen([sys.executable, "-m", "rag_core", "--data-dir", str(data), "serve", "--port",
                                      self.url.rsplit(":", 1)[1]], cwd=REPO, env=shared_env(),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 300  # a loaded machine starts Python, Milvus Lite and the embedder slowly
        while True:
            assert self.proc.poll() is None, self.proc.stderr.read().decode()[-2000:] if self.proc.stderr else ""
            try:
                if httpx.get(f"{self.url}/v1/health", timeout=10).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "serve did not answer"
            time.sleep(0.2)
        self.client = httpx.Client(base_url=self.url, timeout=300)

    def stop(self) -> None:
        self.client.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def cli(data: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rag_core", "--data-dir", str(data), *argv], cwd=REPO,
                          env=shared_env(), capture_output=True, text=True, timeout=600)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november".split()
    sections = [f"## Part {i}\n\n" + " ".join(f"unique{i}marker {words[(i + j) % len(words)]}" for j in range(60))
                for i in range(SECTIONS)]
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / DOC).write_text("# Manual\n\n" + "\n\n".join(sections) + "\n", encoding="utf-8")
    path = tmp_path / "data"
    done = cli(path, "ingest", str(folder / DOC), "--quiet")
    assert done.returncode == 0, done.stderr
    return path


@pytest.fixture
def servers(data: Path) -> Iterator[list[Serve]]:
    started: list[Serve] = []
    try:
        started.append(Serve(data))
        started.append(Serve(data))
        yield started
    finally:
        for s in started:
            s.stop()


def key(n: int) -> str:
    return f"{DOC}#chunk-{n}"


def lookup(server: Serve, query: str) -> dict[str, Any]:
    r = server.client.get("/v1/search", params={"query": query, "retrieve_k": 50, "return_n": 20, "mode": "bm25"})
    assert r.status_code == 200, r.text
    return r.json()


def fates(answer: dict[str, Any]) -> dict[str, str]:
    return {h["evidence_key"]: h["fate"] for h in answer["raw_hits"]}


def test_concurrent_edits_disables_added_chunks_and_tags_from_two_serves_and_the_cli_are_all_kept(
        data: Path, servers: list[Serve]) -> None:
    a, b = servers
    chunks = a.client.get(f"/v1/documents/{DOC}/chunks").json()["chunks"]
    assert len(chunks) >= 40
    text = {c["chunk_index"]: c["content"] for c in chunks}
    changes: list[tuple[Serve, str, str, dict[str, Any]]] = []
    for n in range(12):  # disables through the servers; 12..15 through the CLI below
        changes.append((servers[n % 2], "PATCH", f"/v1/documents/{DOC}/chunks/{n}", {"disabled": True}))
    for n in range(16, 32):
        changes.append((servers[n % 2], "PATCH", f"/v1/documents/{DOC}/chunks/{n}",
                        {"text": f"edited{n}token {text[n]}"}))
    for n in range(32, 40):
        changes.append((servers[n % 2], "PATCH", f"/v1/documents/{DOC}/chunks/{n}", {"keywords": [f"kw{n}word"]}))
    for n in range(8):
        changes.append((servers[n % 2], "POST", f"/v1/documents/{DOC}/chunks", {"text": f"added{n}token text"}))
    for n in range(16):
        changes.append((servers[n % 2], "POST", f"/v1/documents/{DOC}/tags", {"tags": {f"tag{n}": [f"v{n}"]}}))
    assert len(changes) == 60  # and 4 CLI commands: 64

    def send(change: tuple[Serve, str, str, dict[str, Any]]) -> tuple[int, dict[str, Any]]:
        server, method, path, body = change
        r = server.client.request(method, path, json=body)
        return r.status_code, r.json()

    with ThreadPoolExecutor(8) as pool:
        clis = [pool.submit(cli, data, "chunks", "disable", key(n)) for n in range(12, 16)]
        answers = list(pool.map(send, changes))
        done = [c.result() for c in clis]
    assert [status for status, _ in answers] == [200] * len(changes), [a for a in answers if a[0] != 200][:3]
    assert [c.returncode for c in done] == [0] * 4, [c.stderr for c in done]
    added = sorted(body["evidence_key"] for (_, _, path, _), (_, body) in zip(changes, answers)
                   if path.endswith("/chunks"))
    assert len(set(added)) == 8  # each its own key

    def check(server: Serve) -> None:
        record = ChunkEdits(data / "originals" / "biz.edits.json").all()
        assert sorted(k for k, e in record.items() if e.get("disabled")) == sorted(key(n) for n in range(16))
        assert {k for k, e in record.items() if e.get("text")} >= {key(n) for n in range(16, 32)}
        assert sorted(k for k, e in record.items() if e.get("added")) == added
        now = {c["chunk_index"]: c["content"]
               for c in server.client.get(f"/v1/documents/{DOC}/chunks").json()["chunks"]}
        for n in range(16, 32):
            assert now[n].startswith(f"edited{n}token"), n
        for n in range(32, 40):
            assert f"kw{n}word" in now[n], n
        assert sorted(f"added{n}token text" for n in range(8)) == sorted(
            now[int(k.rsplit("-", 1)[1])] for k in added)
        tags = server.client.get("/v1/metadata").json()["documents"][DOC]
        assert {f"tag{n}": [f"v{n}"] for n in range(16)}.items() <= tags.items()
        for n in (0, 5, 12, 15):  # every acknowledged disable drops its chunk from searches
            marker = re.search(r"unique\d+marker", text[n])
            assert marker and fates(lookup(server, marker.group())).get(key(n)) == "disabled", n
        assert fates(lookup(server, "edited20token")).get(key(20)) != "disabled"
        found = lookup(server, "added3token")
        assert any(h["content"] == "added3token text" for h in found["raw_hits"])
        hist = cli(data, "chunks", "history", key(13), "--json")
        assert hist.returncode == 0, hist.stderr
        assert [h["what"] for h in json.loads(hist.stdout)["history"]] == ["disabled"]

    check(a)
    check(b)
    for s in servers:
        s.stop()
    servers.clear()
    reindexed = cli(data, "reindex", "--quiet")
    assert reindexed.returncode == 0, reindexed.stderr
    again = Serve(data)
    servers.append(again)
    check(again)


def test_two_processes_making_names_that_differ_only_by_case_never_both_succeed(data: Path) -> None:
    a, b = Serve(data), Serve(data)
    try:
        for n in range(5):
            names = (f"race{n}x0", f"RACE{n}X0")
            barrier = threading.Barrier(2)

            def make(pair: tuple[Serve, str], barrier: threading.Barrier = barrier) -> int:
                barrier.wait(timeout=60)
                return pair[0].client.post("/v1/kbs", json={"name": pair[1]}).status_code

            with ThreadPoolExecutor(2) as pool:
                statuses = sorted(pool.map(make, [(a, names[0]), (b, names[1])]))
            assert statuses == [201, 409], (n, statuses)
            listed = [kb["name"] for kb in a.client.get("/v1/kbs").json()]
            assert sum(name in listed for name in names) == 1
    finally:
        a.stop()
        b.stop()

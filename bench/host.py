"""Shared mode's cost: lookups through the store host vs Milvus Lite opened in-process, and start-up.

1. Lookup latency. Two copies of one Milvus Lite database (10k chunks: real SciFact chunk texts, random
   unit vectors, as in bench.latency): one opened by this process alone (exclusive mode, what the
   workbench did before the host), one reached through a store host process (shared mode, the default).
   Both are gRPC over a Unix socket to a Lite server; the only difference is which process started it.
   `KnowledgeRetriever.lookup` and the bare `MilvusClient.search` on each, interleaved per query (which
   goes first alternates) so load from elsewhere on the machine hits both alike; p50 / p95, ratio host /
   in-process.
2. Start-up of one CLI command (`python -m rag_core docs --json`, a fresh process each time): exclusive
   (opens Lite itself), shared with no host running (starts one, then connects), shared with a host
   already running (connects). Median of N runs each, same data dir.

    python -m bench.host [--quick]
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

from bench.common import REPO, log, main, percentiles, ratio, record_and_print, scifact_queries, section, table
from bench.latency import fill, texts_pool
from rag_core.embedding.local import LocalUSEEmbedder
from rag_core.retrieval import KnowledgeRetriever, LookupParams, SearchOptions, StoreSearchPort
from rag_core.store import LiteOptions, MilvusStore
from rag_core.store.lite import host_client
from rag_core.store.milvus.search import SEARCH_FIELDS


def _lookups(queries: list[str], embedder: LocalUSEEmbedder, stores: dict[str, MilvusStore]) -> dict:
    payload = {}
    vectors = {q: embedder.embed_query(q).tolist() for q in queries}
    for mode in ("dense", "bm25", "hybrid"):
        params = LookupParams(retrieve_k=20, return_n=5, max_chunks_per_document=2, search=SearchOptions(mode=mode))
        retrievers = {name: KnowledgeRetriever(StoreSearchPort(store, embedder, params.search), params)
                      for name, store in stores.items()}
        timings = {(name, kind): [] for name in stores for kind in ("lookup", "bare")}
        for q in queries[:10]:  # warm up
            for retriever in retrievers.values():
                retriever.lookup(q)
        names = list(stores)
        for i, q in enumerate(queries):
            for name in names[i % 2:] + names[:i % 2]:  # alternate which goes first: no order bias
                store = stores[name]
                t = time.perf_counter()
                retrievers[name].lookup(q)
                timings[(name, "lookup")].append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                if mode in ("dense", "hybrid"):
                    store.client.search("bench", data=[vectors[q]], anns_field="vector", limit=20,
                                        output_fields=SEARCH_FIELDS)
                if mode in ("bm25", "hybrid"):
                    store.client.search("bench", data=[q], anns_field="sparse", limit=20, output_fields=SEARCH_FIELDS)
                timings[(name, "bare")].append((time.perf_counter() - t) * 1000)
        for kind in ("lookup", "bare"):
            own50, own95 = percentiles(timings[("in-process", kind)])
            host50, host95 = percentiles(timings[("host", kind)])
            payload[f"{mode}/{kind}"] = {"in_process_p50": own50, "in_process_p95": own95, "host_p50": host50,
                                         "host_p95": host95}
    return payload


def _cli_seconds(data: Path, mode: str) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env.update({"RAG_MILVUS_LITE_MODE": mode, "RAG_MILVUS_HOST_IDLE": "120"})
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "rag_core", "--data-dir", str(data), "docs", "--json"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=300)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"docs failed: {done.stderr}")
    return seconds


def _startup(data: Path, runs: int) -> dict[str, list[float]]:
    db = (data / "milvus.db").absolute()
    timings: dict[str, list[float]] = {"exclusive": [], "shared, no host running": [],
                                       "shared, host running": []}
    for _ in range(runs):
        timings["exclusive"].append(_cli_seconds(data, "exclusive"))
        timings["shared, no host running"].append(_cli_seconds(data, "shared"))  # starts a host ...
        timings["shared, host running"].append(_cli_seconds(data, "shared"))  # ... which this one finds
        host_client.stop(db)
    return timings


def measure(quick: bool = False) -> dict:
    embedder = LocalUSEEmbedder()
    queries = scifact_queries(60 if quick else 300)
    size = 2_000 if quick else 10_000
    with tempfile.TemporaryDirectory() as tmp:
        own_dir, host_dir = Path(tmp) / "own", Path(tmp) / "host"
        own_dir.mkdir()
        log(f"host: filling {size:,} chunks ...")
        store = MilvusStore(str(own_dir / "milvus.db"), "bench", lite=LiteOptions("exclusive"))
        store.open(embedder.name, embedder.dim)
        fill(store, texts_pool(), 0, size, np.random.default_rng(0))
        store.client.flush("bench")
        store.close()
        shutil.copytree(own_dir, host_dir)
        stores = {"in-process": MilvusStore(str(own_dir / "milvus.db"), "bench", lite=LiteOptions("exclusive")),
                  "host": MilvusStore(str(host_dir / "milvus.db"), "bench", lite=LiteOptions("shared", 120))}
        for store in stores.values():
            store.open(embedder.name, embedder.dim)
        try:
            lookups = _lookups(queries, embedder, stores)
        finally:
            for store in stores.values():
                store.close()
            host_client.stop((host_dir / "milvus.db").absolute())
        log("host: start-up of one CLI command ...")
        startup = _startup(own_dir, 2 if quick else 5)
    return {"queries": len(queries), "chunks": size, "lookups": lookups, "startup_s": startup}


def render(record: dict) -> str:
    rows = []
    for key, c in record["lookups"].items():
        mode, kind = key.split("/")
        rows.append([mode, kind, c["in_process_p50"], c["in_process_p95"], c["host_p50"], c["host_p95"],
                     ratio(c["host_p50"], c["in_process_p50"]), ratio(c["host_p95"], c["in_process_p95"])])
    md = table(["mode", "what", "in-process p50 ms", "in-process p95 ms", "through host p50 ms", "host p95 ms",
                "ratio p50 (host / in-process)", "ratio p95"], rows, 2)
    md += (f"\n\n{record['queries']} SciFact queries per cell on {record['chunks']:,} chunks; retrieve-k 20, "
           "return-n 5, cap 2; lookup = embed + search + post-processing + projection; bare = "
           "`MilvusClient.search` (hybrid: both channels).\n\n")
    startup = record["startup_s"]
    base = statistics.median(startup["exclusive"])
    rows = [[name, statistics.median(values), min(values), ratio(statistics.median(values), base)]
            for name, values in startup.items()]
    md += table(["`python -m rag_core docs --json`", "median s", "best s", "ratio (to exclusive)"], rows, 2)
    md += "\n\nA fresh process per run (interpreter, imports, embedder load, store open and recovery, the listing)."
    return section(f"Shared mode: lookups through the store host vs in-process, and start-up ({record['chunks']:,} "
                   "chunks)", md, record)


def summary(record: dict) -> str:
    """bench/README.md's sentence on the host's cost (under "What these say")."""
    lookup = [ratio(c["host_p50"], c["in_process_p50"]) for k, c in record["lookups"].items() if k.endswith("/lookup")]
    startup = {name: statistics.median(values) for name, values in record["startup_s"].items()}
    text = (f"- **Same speed.** Clients speak gRPC over a Unix socket to Milvus Lite's server, as an in-process "
            f"Milvus Lite does (pymilvus runs it as a child process too). Measured side by side (`bench/host.py`, "
            f"the table above, {record['load']}): lookups through the host at "
            f"{min(lookup):.2f}–{max(lookup):.2f}x the in-process p50; a CLI command takes "
            f"{startup['shared, host running']:.2f} s with a host running vs {startup['exclusive']:.2f} s opening "
            f"Milvus Lite itself, and {startup['shared, no host running']:.2f} s when it must start the host first.")
    return textwrap.fill(text, width=110, subsequent_indent="  ", break_on_hyphens=False) + "\n"


def run(quick: bool = False) -> str:
    return record_and_print("host", quick, measure(quick), render)


if __name__ == "__main__":
    main(run, __doc__)

"""Lookup latency at 10k and 100k chunks in Milvus Lite, and memory (RSS).

Ours = `KnowledgeRetriever.lookup` (embed the query + search + identity/post-processing + projection), in
dense, BM25 and hybrid mode, retrieve-k 20 / return-n 5 / max 2 chunks per document. Baseline = the bare
pymilvus `MilvusClient.search` on the same collection with the same k and output fields (dense: with the
query vector already computed; BM25: raw query text), i.e. the floor any wrapper around Milvus pays.

The chunks are real text (SciFact abstracts chunked at 800/100, repeated to reach the size, so BM25 has
real words to score) with SYNTHETIC random unit vectors written directly through `store.replace_document`
(embedding 100k chunks would take ~10 minutes); queries are the SciFact test claims, embedded for real.
Dense search over random vectors costs the same as over real ones (FLAT is exhaustive).

Rerank stage overhead (at the first size): the default hybrid lookup with the rerank stage on, the top 20
candidates sent to the OpenAI-compatible adapter (`rag_core.rerank.openai_compat`) talking to a loopback
`/v1/rerank` server (tests/servers/rerank.py, which scores at once), against the same lookup without it,
interleaved query by query: what the stage itself costs (HTTP on loopback, JSON, reordering), not a
model's inference time. `python -m bench.latency --rerank-only` measures just that part at 10k chunks and
adds it to the published record.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from bench.common import (
    load,
    load_note,
    log,
    machine,
    main,
    need_set,
    percentiles,
    ratio,
    record_and_print,
    result_path,
    scifact_queries,
    section,
    table,
)
from rag_core.chunking import chunk_text
from rag_core.embedding.local import LocalUSEEmbedder
from rag_core.records import Chunk, Document
from rag_core.retrieval import KnowledgeRetriever, LookupParams, SearchOptions, StoreSearchPort
from rag_core.store import MilvusStore
from rag_core.store.milvus.search import SEARCH_FIELDS

PER_DOC = 100


def rss_mb(pid: int) -> float:
    try:
        import psutil

        return psutil.Process(pid).memory_info().rss / 1e6
    except ImportError:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1e3
    return float("nan")


def milvus_pids(db: Path) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().replace(b"\x00", b" ").decode(errors="replace")
            except OSError:
                continue
            if "milvus_lite" in cmd and str(db) in cmd:
                pids.append(int(proc.name))
    return pids


def texts_pool() -> list[str]:
    pool = []
    with (need_set("scifact") / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            pool += [c.text for c in chunk_text(rec["title"] + "\n\n" + rec["text"], 800, 100)]
    return pool


def fill(store: MilvusStore, pool: list[str], start: int, stop: int, rng: np.random.Generator) -> None:
    for first in range(start, stop, PER_DOC):
        n = min(PER_DOC, stop - first)
        doc_id = f"synthetic/{first // PER_DOC:05d}.txt"
        chunks = [Chunk(chunk_index=i, text=pool[(first + i) % len(pool)], start=i * 800, end=i * 800 + 800,
                        title="", heading_path=(), overlap_chars=0) for i in range(n)]
        vectors = rng.standard_normal((n, 512)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        doc = Document(doc_id, "", doc_id.rsplit("/", 1)[-1], "txt", 0, hashlib.sha256(doc_id.encode()).hexdigest())
        store.replace_document(doc, chunks, vectors, "synthetic")


RERANK_CANDIDATES = 20


def measure_rerank(store: MilvusStore, embedder: LocalUSEEmbedder, queries: list[str], size: int) -> dict:
    """The rerank stage against a loopback /v1/rerank server vs the same lookup without it (see above)."""
    from rag_core.rerank.openai_compat import OpenAICompatReranker
    from rag_core.retrieval import RerankParams
    from tests.servers.rerank import OpenAIRerankServer

    server = OpenAIRerankServer().start()
    try:
        params = LookupParams(retrieve_k=20, return_n=5, max_chunks_per_document=2, search=SearchOptions(),
                              rerank=RerankParams(candidates=RERANK_CANDIDATES, on_error="fail"))
        plain = KnowledgeRetriever(StoreSearchPort(store, embedder, params.search), params)
        reranked = plain.with_reranker(OpenAICompatReranker(server.base_url, "test-rerank", max_retries=0))
        for q in queries[:10]:  # warm up (connections, model)
            plain.lookup(q), reranked.lookup(q)
        without, with_stage, stage = [], [], []
        for q in queries:  # interleaved, so load from elsewhere hits both alike
            t = time.perf_counter()
            plain.lookup(q)
            without.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            result = reranked.lookup(q)
            with_stage.append((time.perf_counter() - t) * 1000)
            stage.append(result.timings["rerank"])
    finally:
        server.stop()
    (w50, w95), (r50, r95), (s50, s95) = percentiles(without), percentiles(with_stage), percentiles(stage)
    return {"size": size, "queries": len(queries), "candidates": RERANK_CANDIDATES, "plain_p50": w50, "plain_p95": w95,
            "rerank_p50": r50, "rerank_p95": r95, "stage_p50": s50, "stage_p95": s95}


def measure(quick: bool = False) -> dict:
    embedder = LocalUSEEmbedder()
    queries = []
    queries = scifact_queries(60 if quick else 300)
    vectors = {q: embedder.embed_query(q) for q in queries}
    pool = texts_pool()
    rng = np.random.default_rng(0)
    payload: dict = {"queries": len(queries), "retrieve_k": 20, "return_n": 5, "cap": 2, "sizes": {}}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "latency.db"
        store = MilvusStore(str(db), "bench")
        store.open(embedder.name, embedder.dim)
        filled = 0
        for size in ((2_000, 5_000) if quick else (10_000, 100_000)):
            log(f"latency: filling to {size:,} chunks ...")
            started = time.perf_counter()
            fill(store, pool, filled, size, rng)
            filled = size
            store.client.flush("bench")  # seal the new segments now, not during the measurement
            log(f"  ... {time.perf_counter() - started:.1f}s")
            assert store.count_chunks() == size
            cell: dict = {}
            for mode in ("dense", "bm25", "hybrid"):
                params = LookupParams(retrieve_k=20, return_n=5, max_chunks_per_document=2,
                                      search=SearchOptions(mode=mode))
                retriever = KnowledgeRetriever(StoreSearchPort(store, embedder, params.search), params)
                for q in queries[:10]:  # warm up
                    retriever.lookup(q)
                ours, embed, post, bare = [], [], [], []
                # Interleaved per query, so load from elsewhere on the machine hits both sides alike.
                for q in queries:
                    t = time.perf_counter()
                    result = retriever.lookup(q)
                    ours.append((time.perf_counter() - t) * 1000)
                    embed.append(result.timings.get("embed", 0.0))
                    post.append(result.timings["postprocess"] + result.timings["projection"])
                    t = time.perf_counter()
                    if mode in ("dense", "hybrid"):
                        store.client.search("bench", data=[vectors[q].tolist()], anns_field="vector", limit=20,
                                            output_fields=SEARCH_FIELDS)
                    if mode in ("bm25", "hybrid"):
                        store.client.search("bench", data=[q], anns_field="sparse", limit=20,
                                            output_fields=SEARCH_FIELDS)
                    bare.append((time.perf_counter() - t) * 1000)
                o50, o95 = percentiles(ours)
                b50, b95 = percentiles(bare)
                cell[mode] = {"ours_p50": o50, "ours_p95": o95, "embed_p50": percentiles(embed)[0],
                              "post_p50": percentiles(post)[0], "bare_p50": b50, "bare_p95": b95}
            cell["rss_mb"] = {"python": rss_mb(os.getpid()),
                              "milvus_lite": sum(rss_mb(pid) for pid in milvus_pids(db))}
            payload["sizes"][str(size)] = cell
            if "rerank" not in payload:
                payload["rerank"] = measure_rerank(store, embedder, queries, size)
        store.close()
    return payload


def rerank_only(quick: bool = False) -> str:
    """Measure the rerank stage alone at 10k chunks (2k quick) and add it to the latency record."""
    embedder = LocalUSEEmbedder()
    queries = scifact_queries(60 if quick else 300)
    size = 2_000 if quick else 10_000
    with tempfile.TemporaryDirectory() as tmp:
        store = MilvusStore(str(Path(tmp) / "latency.db"), "bench")
        store.open(embedder.name, embedder.dim)
        log(f"latency: filling to {size:,} chunks ...")
        fill(store, texts_pool(), 0, size, np.random.default_rng(0))
        store.client.flush("bench")
        rerank = measure_rerank(store, embedder, queries, size)
        store.close()
    record = load("latency", quick)
    if record is None:
        raise SystemExit("No latency record to add to: run `python -m bench.latency` first.")
    # The lookup figures keep the machine line of the run that measured them; the stage gets its own.
    record["rerank"] = {**rerank, "measured": {"machine": machine(), "load": load_note(),
                                               "timestamp": datetime.now(UTC).isoformat(timespec="seconds")}}
    result_path("latency", quick).write_text(json.dumps(record, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    text = render(record)
    print(text, flush=True)
    return text


def render(record: dict) -> str:
    rows = []
    for size, cell in record["sizes"].items():
        label = f"{int(size):,}"
        for mode in ("dense", "bm25", "hybrid"):
            c = cell[mode]
            rows.append([label, mode, c["ours_p50"], c["ours_p95"], c["embed_p50"], c["post_p50"], c["bare_p50"],
                         c["bare_p95"], ratio(c["ours_p50"], c["bare_p50"])])
        rss = cell["rss_mb"]
        rows.append([label, "RSS (MB)", f"python {rss['python']:,.0f}", f"milvus {rss['milvus_lite']:,.0f}",
                     "", "", "", "", ""])
    md = table(["chunks", "mode", "ours p50 ms", "ours p95 ms", "of which embed p50", "post+projection p50",
                "bare pymilvus p50 ms", "bare p95 ms", "ratio p50 (ours / bare)"], rows, 2)
    md += (f"\n\n{record['queries']} SciFact queries per cell; retrieve-k {record['retrieve_k']}, return-n "
           f"{record['return_n']}, cap {record['cap']}. SYNTHETIC random unit vectors (real chunk texts for BM25), "
           "inserted directly; the bare baseline searches with a precomputed query vector (no embedding) and does no "
           "post-processing — hybrid = both bare searches. RSS: this Python process (incl. the embedding model) and "
           "the Milvus Lite server process.")
    text = section("Lookup latency and memory at 10k / 100k chunks (Milvus Lite)", md, record)
    r = record.get("rerank")
    if r:
        rows = [[f"{r['size']:,}", r["plain_p50"], r["plain_p95"], r["rerank_p50"], r["rerank_p95"], r["stage_p50"],
                 r["stage_p95"], ratio(r["rerank_p50"], r["plain_p50"])]]
        md = table(["chunks", "hybrid p50 ms", "hybrid p95 ms", "+ rerank p50 ms", "+ rerank p95 ms",
                    "rerank stage p50", "rerank stage p95", "ratio p50 (with / without)"], rows, 2)
        md += (f"\n\n{r['queries']} SciFact queries, interleaved; the top {r['candidates']} of retrieve-k 20 sent to "
               "the OpenAI-compatible adapter and a loopback `/v1/rerank` server that scores at once: the stage's own "
               "cost (HTTP, JSON, reordering), without a model's inference time.")
        measured = r.get("measured") or record
        text += "\n" + section("Rerank stage overhead (loopback rerank server)", md, measured)
    return text


def run(quick: bool = False) -> str:
    return record_and_print("latency", quick, measure(quick), render)


if __name__ == "__main__":
    import sys

    if "--rerank-only" in sys.argv:
        rerank_only("--quick" in sys.argv)
    else:
        main(run, __doc__)

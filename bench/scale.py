"""A million chunks on one machine: ingest rate, index build time, peak memory and hybrid lookup latency in
Milvus Lite, with the dense index the store chooses by size, next to bare pymilvus on the same collection.

    python -m bench.scale [--chunks N] [--quick]

The chunks are real text: the bundled corpora (the BEIR sets of ../shared/eval: SciFact, CMRC 2018, COVID-QA,
and examples/kb), chunked at 800/100 as the workbench does, repeated until there are N chunks. The first copy
of a chunk is its text; copy v > 0 has its sentences shuffled (seeded by v) and `(variant v)` appended, so BM25
sees real words in new orders and every row is a distinct text.

The VECTORS are computed once per unique text by the real local embedder (USE v3) and cached on disk
(~/.cache/rag-workbench/bench-scale, or $RAG_BENCH_CACHE), not once per row: embedding a million chunks on two
cores would take hours. A variant's vector is its text's cached vector plus a small deterministic perturbation
(Gaussian, seeded by the row, norm ~0.1 of the unit vector), normalised. The queries (SciFact claims and CMRC 2018
questions) are embedded for real.

What is measured, in one run:

* ingest: `MilvusStore.replace_documents` (the versioned write every upload goes through), 100 chunks a
  document, 10 documents a call, vectors given: chunks/s into the store (no embedding);
* the dense index the store chooses for the size (`rag_core.store.milvus.schema.choose_index`: FLAT on Lite below
  `IVF_FROM` rows, IVF_FLAT from there) and its build time (`MilvusStore.fit_index`: drop, build, load);
* recall@10 of the chosen index against FLAT: the same queries' dense top 10 through bare pymilvus on the same
  collection before the switch (FLAT, exact) and after it, and the same at other `nprobe`s;
* hybrid lookups p50/p95: `KnowledgeRetriever.lookup` (embed the query, dense + BM25 through the store's
  searcher, fusion, post-processing, projection; retrieve-k 20, return-n 5), and the baseline: bare
  `MilvusClient.search` dense (query vector precomputed) + BM25 on the same collection, interleaved query by query;
* peak RSS (psutil, sampled every half second) of this process (with the embedding model) and of the Milvus Lite
  server process, over the whole run.

The goal (issue 37): hybrid p50 <= 150 ms and memory <= 8 GB at 1M chunks on 2 cores.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench.common import (
    REPO,
    load_note,
    log,
    need_set,
    percentiles,
    ratio,
    record_and_print,
    save_record,
    section,
    table,
)
from bench.latency import milvus_pids, rss_mb
from rag_core.chunking import chunk_text
from rag_core.embedding.local import LocalUSEEmbedder
from rag_core.records import Chunk, Document, NewVersion
from rag_core.retrieval import KnowledgeRetriever, LookupParams, SearchOptions, StoreSearchPort
from rag_core.store import MilvusStore
from rag_core.store.milvus.schema import IVF_FROM, NPROBE, choose_index
from rag_core.store.milvus.search import SEARCH_FIELDS

FULL_CHUNKS, QUICK_CHUNKS = 1_000_000, 20_000
PER_DOC, DOCS_PER_CALL = 100, 10
PERTURBATION = 0.1  # the norm of a variant's offset from its text's unit vector
CACHE = Path(os.environ.get("RAG_BENCH_CACHE") or Path.home() / ".cache" / "rag-workbench" / "bench-scale")
COLLECTION = "scale"
SENTENCE = re.compile(r"(?<=[.!?。！？])\s*")
OTHER_NPROBES = (8, 16, 64)
BLOCK = 1000


# ------------------------------------------------------------------------------------------- the corpus
def unique_texts(limit: int | None = None) -> list[str]:
    """The bundled corpora chunked at 800/100, in a fixed order (`limit`: the first that many)."""
    texts: list[str] = []
    for name in ("scifact", "cmrc2018", "covidqa"):
        with (need_set(name) / "corpus.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                title, text = rec.get("title") or "", rec["text"]
                body = text if not title or text.startswith(title) else f"{title}\n\n{text}"
                texts += [c.text for c in chunk_text(body, 800, 100)]
                if limit is not None and len(texts) >= limit:
                    return texts[:limit]
    for path in sorted((REPO / "examples" / "kb").rglob("*.md")):
        texts += [c.text for c in chunk_text(path.read_text(encoding="utf-8"), 800, 100)]
    return texts[:limit] if limit is not None else texts


def cached_vectors(texts: list[str], embedder: LocalUSEEmbedder, cache: Path = CACHE) -> tuple[np.ndarray, bool]:
    """The embedder's vector of every text, computed once and kept in `cache`, in blocks of BLOCK texts (each file
    keyed by its texts and the embedder, so a shorter list reuses the blocks of a longer one); also whether every
    vector was read from the cache."""
    parts, cached = [], True
    for first in range(0, len(texts), BLOCK):
        block = texts[first:first + BLOCK]
        key = hashlib.sha256("\x00".join([embedder.name, *block]).encode("utf-8", "surrogatepass")).hexdigest()[:16]
        path = cache / f"vectors-{key}.npy"
        if path.is_file():
            parts.append(np.load(path))
            continue
        cached = False
        log(f"scale: embedding unique chunks {first:,}-{first + len(block):,} of {len(texts):,} once "
            f"(cached in {cache}) ...")
        started = time.perf_counter()
        vectors = np.asarray(embedder.embed_documents(block), dtype=np.float32)
        log(f"  ... {time.perf_counter() - started:.0f}s")
        cache.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f"{path.stem}.{os.getpid()}.part.npy")
        np.save(part, vectors)
        os.replace(part, path)
        parts.append(vectors)
    return np.concatenate(parts), cached


def variant(text: str, v: int) -> str:
    """Copy `v` of a text: itself (0), else its sentences shuffled by `v` and the copy's number appended."""
    if v == 0:
        return text
    sentences = [s for s in SENTENCE.split(text) if s]
    random.Random(v).shuffle(sentences)
    return " ".join(sentences) + f" (variant {v})"


def row_vectors(first: int, n: int, vectors: np.ndarray) -> np.ndarray:
    """The vectors of rows first .. first+n-1: row i's is text i % len(vectors)'s, plus (copies after the first) a
    perturbation of norm PERTURBATION seeded by `first`, normalised."""
    idx = np.arange(first, first + n)
    out = vectors[idx % len(vectors)].copy()
    noise = np.random.default_rng(first).standard_normal(out.shape).astype(np.float32)
    noise *= PERTURBATION / np.linalg.norm(noise, axis=1, keepdims=True)
    out += noise * (idx >= len(vectors))[:, None]
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


def rows(first: int, n: int, texts: list[str], vectors: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Rows first .. first+n-1: row i is copy i // len(texts) of text i % len(texts), with `row_vectors`."""
    return ([variant(texts[i % len(texts)], i // len(texts)) for i in range(first, first + n)],
            row_vectors(first, n, vectors))


def versions(first: int, n_docs: int, total: int, texts: list[str], vectors: np.ndarray) -> list[NewVersion]:
    """Documents of PER_DOC consecutive rows each, from row `first` on (not past `total`)."""
    out = []
    for d in range(n_docs):
        start = first + d * PER_DOC
        n = min(PER_DOC, total - start)
        if n <= 0:
            break
        chunk_texts, chunk_vectors = rows(start, n, texts, vectors)
        chunks, offset = [], 0
        for i, t in enumerate(chunk_texts):
            chunks.append(Chunk(i, t, offset, offset + len(t), "", (), 0))
            offset += len(t) + 2
        doc_id = f"scale/{start // PER_DOC:06d}.txt"
        document = Document(doc_id, "", doc_id.rsplit("/", 1)[1], "txt", offset,
                            hashlib.sha256(doc_id.encode()).hexdigest())
        out.append(NewVersion(document, chunks, chunk_vectors, "scale"))
    return out


def queries(n: int) -> list[str]:
    """SciFact claims and CMRC 2018 questions, 3 to 1."""
    def first(name: str, k: int) -> list[str]:
        with (need_set(name) / "queries.jsonl").open(encoding="utf-8") as fh:
            return [json.loads(line)["text"] for _, line in zip(range(k), fh)]
    english = n - n // 4
    return first("scifact", english) + first("cmrc2018", n - english)


# ------------------------------------------------------------------------------------------- memory
class PeakRSS:
    """Peak RSS (MB) of this process and of the Milvus Lite server process of `db`, sampled every half second."""

    def __init__(self, db: Path) -> None:
        self.db, self.python, self.lite, self.total = db, 0.0, 0.0, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> None:
        python = rss_mb(os.getpid())
        lite = sum(rss_mb(pid) for pid in milvus_pids(self.db))
        self.python, self.lite = max(self.python, python), max(self.lite, lite)
        self.total = max(self.total, python + lite)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self.sample()

    def __enter__(self) -> PeakRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()


# ------------------------------------------------------------------------------------------- measuring
def doc_id(first_row: int) -> str:
    return f"scale/{first_row // PER_DOC:06d}.txt"


def row_of(doc: str, chunk_index: int) -> int:
    return int(doc.rsplit("/", 1)[1].split(".")[0]) * PER_DOC + chunk_index


def exact_top(queries: np.ndarray, total: int, vectors: np.ndarray, k: int = 10) -> list[list[int]]:
    """Each query's exact top-k rows by cosine over the first `total` rows, in numpy (what FLAT returns: FLAT is an
    exhaustive scan), the rows' vectors made again as they were written (per document)."""
    best_s = np.full((len(queries), 0), -np.inf, dtype=np.float32)
    best_i = np.zeros((len(queries), 0), dtype=np.int64)
    step = PER_DOC * 100
    for first in range(0, total, step):
        block = np.concatenate([row_vectors(d, min(PER_DOC, total - d), vectors)
                                for d in range(first, min(total, first + step), PER_DOC)])
        scores = np.concatenate([best_s, queries @ block.T], axis=1)
        rows_here = np.broadcast_to(np.arange(first, first + len(block)), (len(queries), len(block)))
        ids = np.concatenate([best_i, rows_here], axis=1)
        keep = np.argpartition(-scores, min(k, scores.shape[1] - 1), axis=1)[:, :k]
        best_s, best_i = np.take_along_axis(scores, keep, 1), np.take_along_axis(ids, keep, 1)
    return [list(map(int, row)) for row in best_i]


def dense_top(store: MilvusStore, vectors: list[list[float]], nprobe: int | None = None) -> list[list[int]]:
    """Bare pymilvus: each query vector's top-10 rows."""
    params = {"search_params": {"params": {"nprobe": nprobe}}} if nprobe else {}
    out = []
    for vector in vectors:
        found = store.client.search(COLLECTION, data=[vector], anns_field="vector", limit=10,
                                    output_fields=["doc_id", "chunk_index"], **params)
        out.append([row_of(h["entity"]["doc_id"], h["entity"]["chunk_index"]) for h in found[0]])
    return out


def recall(found: list[list[int]], truth: list[list[int]]) -> float:
    return float(np.mean([len(set(f) & set(t)) / max(1, len(t)) for f, t in zip(found, truth)]))


def lookups(store: MilvusStore, embedder: LocalUSEEmbedder, texts: list[str], vectors: dict[str, list[float]],
            nprobe: int) -> dict:
    """Hybrid `KnowledgeRetriever.lookup` against bare dense + BM25 pymilvus searches, interleaved."""
    params = LookupParams(retrieve_k=20, return_n=5, max_chunks_per_document=2, search=SearchOptions(mode="hybrid"))
    retriever = KnowledgeRetriever(StoreSearchPort(store, embedder, params.search), params)
    for q in texts[:5]:  # warm up
        retriever.lookup(q)
    ours, bare = [], []
    for q in texts:
        started = time.perf_counter()
        retriever.lookup(q)
        ours.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        store.client.search(COLLECTION, data=[vectors[q]], anns_field="vector", limit=20,
                            output_fields=SEARCH_FIELDS, search_params={"params": {"nprobe": nprobe}})
        store.client.search(COLLECTION, data=[q], anns_field="sparse", limit=20, output_fields=SEARCH_FIELDS)
        bare.append((time.perf_counter() - started) * 1000)
    (o50, o95), (b50, b95) = percentiles(ours), percentiles(bare)
    return {"ours_p50": o50, "ours_p95": o95, "bare_p50": b50, "bare_p95": b95, "queries": len(texts)}


def sizes_to(total: int) -> list[int]:
    """The sizes measured on the way to `total` (each a record, so a run stopped early keeps the largest)."""
    steps = [n for n in (100_000, 250_000, 500_000) if n < total]
    return [*steps, total]


def measure(quick: bool = False, chunks: int | None = None, unique: int | None = None, n_queries: int | None = None,
            ivf_from: int = IVF_FROM, cache: Path = CACHE, save: Callable[[dict], object] | None = None) -> dict:
    """Fill one Lite collection size by size up to `chunks`, measuring at each (see the module's docstring);
    `save` is given the record so far after each size."""
    total = chunks or (QUICK_CHUNKS if quick else FULL_CHUNKS)
    n_queries = n_queries or (40 if quick else 120)
    embedder = LocalUSEEmbedder()
    texts = unique_texts(unique)
    base, was_cached = cached_vectors(texts, embedder, cache)
    asked = list(dict.fromkeys(queries(n_queries)))  # SciFact repeats a few claims: each once, in order
    qvec = {q: embedder.embed_query(q).astype(np.float32).tolist() for q in asked}
    qmatrix = np.asarray([qvec[q] for q in asked], dtype=np.float32)  # the rows of `truth`, as `asked`
    payload: dict = {"chunks": 0, "unique_texts": len(texts), "vectors_cached": was_cached,
                     "perturbation": PERTURBATION, "queries": len(asked), "retrieve_k": 20, "return_n": 5,
                     "ivf_from": ivf_from, "sizes": {}}
    with tempfile.TemporaryDirectory(prefix="bench-scale-", dir=os.environ.get("RAG_BENCH_TMP")) as tmp:
        db = Path(tmp) / "scale.db"
        store = MilvusStore(str(db), COLLECTION)
        store.open(embedder.name, embedder.dim)
        written, ingest_s = 0, 0.0
        with PeakRSS(db) as peak:
            for size in sizes_to(total):
                log(f"scale: writing chunks {written:,}-{size:,} ...")
                started = time.perf_counter()
                for first in range(written, size, PER_DOC * DOCS_PER_CALL):
                    store.replace_documents(versions(first, DOCS_PER_CALL, size, texts, base))
                store.client.flush(COLLECTION)
                took = time.perf_counter() - started
                ingest_s += took
                log(f"  ... {took:.0f}s ({(size - written) / took:,.0f} chunks/s)")
                assert store.count_chunks() == size, (store.count_chunks(), size)
                cell: dict = {"ingest": {"chunks_per_s": size / ingest_s, "seconds": ingest_s,
                                         "last_step_chunks_per_s": (size - written) / took}}
                written = size
                log("scale: the exact dense top 10 (numpy) ...")
                truth = exact_top(qmatrix, size, base)
                chosen = choose_index(True, size, ivf_from)
                log(f"scale: the store's choice at {size:,} chunks: {chosen.index_type} {chosen.params}; fitting ...")
                started = time.perf_counter()
                index = store.fit_index(ivf_from)
                ivf = index.index_type == "IVF_FLAT"
                cell["index"] = {"type": index.index_type, "params": index.params,
                                 "build_s": time.perf_counter() - started, "nprobe": NPROBE if ivf else None}
                nprobes = sorted({NPROBE, *OTHER_NPROBES}) if ivf else [NPROBE]
                cell["recall_at_10"] = {str(p): recall(dense_top(store, [qvec[q] for q in asked], p), truth)
                                        for p in nprobes}
                log(f"scale: recall@10 against exact: {cell['recall_at_10']}; hybrid lookups ...")
                cell["lookup"] = lookups(store, embedder, asked, qvec, NPROBE)
                peak.sample()
                # now, after the index build: the peak above may be the build's
                cell["rss_now_mb"] = {"python": rss_mb(os.getpid()),
                                      "milvus_lite": sum(rss_mb(pid) for pid in milvus_pids(db))}
                cell["peak_rss_mb"] = {"python": peak.python, "milvus_lite": peak.lite, "total": peak.total}
                cell["load"] = load_note()  # the machine may be shared: each size's own
                cell["db_mb"] = sum(f.stat().st_size for f in Path(tmp).rglob("*") if f.is_file()) / 1e6
                log(f"scale: {size:,}: {json.dumps(cell)}")
                payload["sizes"][str(size)] = cell
                payload["chunks"] = size
                if save is not None:
                    save(payload)
            store.close()
    return payload


# ------------------------------------------------------------------------------------------- the tables
def _index(cell: dict) -> str:
    idx = cell["index"]
    # not the nprobe the store asks for: Milvus Lite 2.5.1 ignores it (the recall line shows it)
    return idx["type"] + (f" (nlist {idx['params']['nlist']})" if idx["nprobe"] else "")


def projection(record: dict) -> dict | None:
    """When the run stopped short of a million chunks: peak memory at 1M extrapolated linearly from the two largest
    measured sizes, and hybrid p50 too when both had the same kind of index (a PROJECTION, labelled so wherever
    shown); None when 1M was measured or only one size was."""
    sizes = sorted(record["sizes"], key=int)
    if int(sizes[-1]) >= FULL_CHUNKS or len(sizes) < 2:
        return None
    (n0, c0), (n1, c1) = [(int(n), record["sizes"][n]) for n in sizes[-2:]]

    def line(a: float, b: float) -> float:
        return b + (b - a) * (FULL_CHUNKS - n1) / (n1 - n0)
    same = c0["index"]["type"] == c1["index"]["type"]
    return {"from": [n0, n1], "memory_mb": line(c0["peak_rss_mb"]["total"], c1["peak_rss_mb"]["total"]),
            "p50_ms": line(c0["lookup"]["ours_p50"], c1["lookup"]["ours_p50"]) if same else None}


def _projected(proj: dict) -> str:
    p50 = f"hybrid p50 ~{proj['p50_ms']:.0f} ms, " if proj["p50_ms"] is not None else ""
    return (f"PROJECTED to 1M (linear from {proj['from'][0]:,} and {proj['from'][1]:,} chunks, not measured): "
            f"{p50}peak memory ~{proj['memory_mb'] / 1000:.1f} GB.")


def render(record: dict) -> str:
    rows = []
    for size, cell in sorted(record["sizes"].items(), key=lambda kv: int(kv[0])):
        lk, chosen_recall = cell["lookup"], cell["recall_at_10"][str(cell["index"]["nprobe"] or NPROBE)]
        rows.append([f"{int(size):,}", _index(cell), cell["index"]["build_s"], chosen_recall, lk["ours_p50"],
                     lk["ours_p95"], lk["bare_p50"], lk["bare_p95"], ratio(lk["ours_p50"], lk["bare_p50"]),
                     f"{cell['ingest']['chunks_per_s']:,.0f}", f"{cell['peak_rss_mb']['total']:,.0f}"])
    md = table(["chunks", "dense index (the store's choice)", "index build s", "recall@10 vs FLAT", "hybrid p50 ms",
                "hybrid p95 ms", "bare pymilvus p50 ms", "bare p95 ms", "ratio p50 (ours / bare)", "ingest chunks/s",
                "peak RSS MB"], rows, 2)
    largest = record["sizes"][str(record["chunks"])]
    ivf = largest["index"]["nprobe"] is not None
    recalls = ", ".join(f"nprobe {p}: {r:.3f}" for p, r in largest["recall_at_10"].items()) if ivf else "1.000 (FLAT)"
    peak = largest["peak_rss_mb"]
    p50 = largest["lookup"]["ours_p50"]
    if ivf and len(set(largest["recall_at_10"].values())) == 1:
        recalls += " (the same at every nprobe: Milvus Lite 2.5.1 ignores the search's nprobe)"
    md += (f"\n\nAt {record['chunks']:,} chunks: recall@10 against FLAT {recalls}; peak RSS {peak['total']:,.0f} MB "
           f"(bench process with the embedding model {peak['python']:,.0f}, Milvus Lite {peak['milvus_lite']:,.0f})"
           + (f", {sum(largest['rss_now_mb'].values()):,.0f} MB once the index was built and searched"
              if "rss_now_mb" in largest else "") + "; "
           f"database {largest['db_mb']:,.0f} MB on disk. Goal (issue 37, at 1M on 2 cores): hybrid p50 <= 150 ms, "
           "memory <= 8 GB: ")
    if record["chunks"] >= FULL_CHUNKS:
        md += (f"p50 {'met' if p50 <= 150 else 'NOT met'} ({p50:.1f} ms), memory "
               f"{'met' if peak['total'] <= 8000 else 'NOT met'} ({peak['total'] / 1000:.1f} GB).")
    else:
        md += f"1M was NOT measured (the run stopped at {record['chunks']:,} chunks)."
    proj = projection(record)
    if proj:
        md += " " + _projected(proj)
    md += (f"\n\nReal text: the first {record['unique_texts']:,} unique chunks of the bundled corpora (800/100; "
           "SciFact first, then CMRC 2018, COVID-QA, examples/kb), repeated with sentence shuffles and numbered "
           "variants. Vectors: computed ONCE per unique text by the local embedder and "
           "cached; a repeat's vector is its text's plus a deterministic perturbation of norm "
           f"{record['perturbation']}. {record['queries']} queries (SciFact claims, CMRC 2018 questions) embedded for "
           "real. Ours = `KnowledgeRetriever.lookup` hybrid (embedding the query included), retrieve-k "
           f"{record['retrieve_k']}, return-n {record['return_n']}; bare = `MilvusClient.search` dense (precomputed "
           "vector) + BM25 on the same collection, interleaved. Recall against FLAT = against the exact cosine "
           "top 10 (what FLAT's exhaustive scan returns), computed in numpy. Ingest = "
           "`MilvusStore.replace_documents`, vectors given, cumulative. On Lite the store uses FLAT below "
           f"{record['ivf_from']:,} chunks and IVF_FLAT from "
           "there (`choose_index` in `rag_core/store/milvus/schema.py`); the build time is `MilvusStore.fit_index` "
           "(drop, build, load). The sizes are measured one after the other, each at the machine's load of the "
           "moment" + ("" if all("load" in c for c in record["sizes"].values()) else " (this record keeps only the "
                       "last one, below)") + "; latencies of different sizes compare only at similar loads.")
    return section("A million chunks on one machine (Milvus Lite)", md, record)


def quote(record: dict) -> str:
    """The sentence docs/deployment.md quotes (tests/bench/test_published.py keeps it current)."""
    cell = record["sizes"][str(record["chunks"])]
    lk, peak = cell["lookup"], cell["peak_rss_mb"]
    chosen_recall = cell["recall_at_10"][str(cell["index"]["nprobe"] or NPROBE)]
    text = (f"at {record['chunks']:,} chunks ({record['unique_texts']:,} unique texts repeated; {record['load']} at "
            f"the end of the run), hybrid lookups p50 {lk['ours_p50']:.0f} ms and p95 "
            f"{lk['ours_p95']:.0f} ms (bare pymilvus on the same collection: {lk['bare_p50']:.0f} / "
            f"{lk['bare_p95']:.0f} ms) with {_index(cell)}, recall@10 against FLAT {chosen_recall:.3f}"
            + (f", index built in {cell['index']['build_s']:.0f} s" if cell["index"]["nprobe"] else "")
            + f", peak memory {peak['total'] / 1000:.1f} GB, ingest "
            f"{cell['ingest']['chunks_per_s']:,.0f} chunks/s.")
    proj = projection(record)
    if proj:
        text += " A million chunks was NOT measured. " + _projected(proj)
    return text[0].upper() + text[1:]


def run(quick: bool = False, chunks: int | None = None, unique: int | None = None) -> str:
    return record_and_print("scale", quick, measure(quick, chunks, unique,
                                                    save=lambda data: save_record("scale", quick, data)), render)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_CHUNKS:,} chunks (bench/results/quick/)")
    parser.add_argument("--chunks", type=int, help=f"how many chunks (default {FULL_CHUNKS:,})")
    parser.add_argument("--unique", type=int, help="only the first N unique chunks of the corpora (default: all)")
    args = parser.parse_args()
    run(args.quick, args.chunks, args.unique)


if __name__ == "__main__":
    main()

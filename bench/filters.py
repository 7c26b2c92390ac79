"""Metadata filters on Milvus Lite: what a scoped search costs, the chunk rows' `labels` against the alternatives.

A scope (`--filter team=t3`) reaches Milvus as `array_contains_any(labels, [...])` on the chunk rows' `labels`
ARRAY (scope, store.milvus.filters). Measured here through MilvusStore on synthetic chunks (random
vectors, random words), in the same run, interleaved query by query so load on the machine hits every variant:

* no filter (the floor);
* `doc_id in [...]`, the documents the scope selects listed one by one (what the scope did before the labels);
* the labels filter, one key and two keys, on rows carrying the labels as written (about 10 a row);
* the same filter on rows carrying every character prefix of the ingest time (about 35 a row), the layout
  rejected here: Milvus Lite 2.5.1 cannot index an ARRAY, it scans every row's labels, so the cost grows with
  them.

    python -m bench.filters [--quick]
"""

from __future__ import annotations

import hashlib
import random
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.common import log, main, ratio, record_and_print, section, table
from rag_core import scope
from rag_core.records import Chunk, Document, NewVersion
from rag_core.store import MilvusStore

DIM, CHUNKS_PER_DOC, TEAMS = 64, 50, 10
WORDS = [f"w{i}" for i in range(3000)]


def _version(doc: int, rng: np.random.Generator) -> NewVersion:
    doc_id = f"f{doc % 20}/sub{doc % 3}/d{doc}.md"
    texts = [" ".join(random.choices(WORDS, k=60)) for _ in range(CHUNKS_PER_DOC)]
    text = "\n\n".join(texts)
    chunks, start = [], 0
    for i, t in enumerate(texts):
        chunks.append(Chunk(i, t, start, start + len(t), "", (), 0))
        start += len(t) + 2
    document = Document(doc_id, text, doc_id.rsplit("/", 1)[1], "md", len(text),
                        hashlib.sha256(text.encode()).hexdigest())
    vectors = rng.normal(size=(CHUNKS_PER_DOC, DIM)).astype(np.float32)
    return NewVersion(document, chunks, vectors, "fp", labels={"team": (f"t{doc % TEAMS}",)})


def _fill(store: MilvusStore, docs: int, every_prefix: bool) -> int:
    random.seed(0)
    rng = np.random.default_rng(0)
    cuts = scope.INGESTED_CUTS
    if every_prefix:  # the rejected layout: every character prefix of the ingest time
        scope.INGESTED_CUTS = tuple(range(26))
    try:
        for start in range(0, docs, 20):
            store.replace_documents([_version(d, rng) for d in range(start, min(docs, start + 20))])
    finally:
        scope.INGESTED_CUTS = cuts
    return len(store.get_chunks("f0/sub0/d0.md")[0].labels)


def measure(quick: bool = False) -> dict:
    docs, queries = (80, 8) if quick else (400, 25)
    with tempfile.TemporaryDirectory(prefix="bench-filters-") as tmp:
        stores = {name: MilvusStore(str(Path(tmp) / f"{name}.db"), name) for name in ("labels", "prefixes")}
        per_row = {}
        for name, store in stores.items():
            store.open("bench:random", DIM)
            log(f"filters: writing {docs * CHUNKS_PER_DOC} chunks ({name})")
            per_row[name] = _fill(store, docs, every_prefix=name == "prefixes")
        team3 = [d.doc_id for d in stores["labels"].list_documents() if int(d.doc_id[:-3].rsplit("/d", 1)[1]) % 10 == 3]
        variants = {
            "no filter": ("labels", None),
            f"doc_id in [{len(team3)} ids]": ("labels", {"doc_id": team3}),
            "labels: team=t3": ("labels", {"labels": ["team=t3"]}),
            "labels: team=t3, folder=f3": ("labels", {"labels": ["team=t3", "folder=f3"]}),
            "every-prefix labels: team=t3": ("prefixes", {"labels": ["team=t3"]}),
        }
        rng = np.random.default_rng(1)
        times: dict[str, dict[str, list[float]]] = {v: {"dense": [], "bm25": []} for v in variants}
        hits: dict[str, int] = {}
        for _ in range(queries):
            vector, text = rng.normal(size=DIM).astype(np.float32), " ".join(random.choices(WORDS, k=4))
            for variant, (name, filters) in variants.items():
                store = stores[name]
                started = time.perf_counter()
                found = store.search_dense(vector, 20, filters)
                times[variant]["dense"].append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                store.search_bm25(text, 20, filters)
                times[variant]["bm25"].append((time.perf_counter() - started) * 1000)
                hits[variant] = len(found)
        for store in stores.values():
            store.close()
    return {"chunks": docs * CHUNKS_PER_DOC, "documents": docs, "queries": queries, "labels_per_row": per_row,
            "hits": hits, "p50_ms": {v: {c: statistics.median(t) for c, t in ch.items()} for v, ch in times.items()}}


def render(record: dict) -> str:
    p50 = record["p50_ms"]
    floor = next(iter(p50.values()))
    rows = [[variant, ms["dense"], ms["bm25"], floor["dense"], ratio(ms["dense"], floor["dense"])]
            for variant, ms in p50.items()]
    text = table(["search", "dense ms (p50)", "bm25 ms (p50)", "baseline dense ms", "ratio"], rows, digits=2)
    per_row = record["labels_per_row"]
    note = (f"{record['chunks']} chunks of {record['documents']} documents in one Milvus Lite collection, through "
            f"MilvusStore (top 20, {record['queries']} queries, variants interleaved); labels per row: "
            f"{per_row['labels']} as written, {per_row['prefixes']} with every prefix of the ingest time. "
            "Baseline: no filter. team=t3 selects a tenth of the documents.")
    return section("Metadata filters: the chunk rows' labels vs a doc_id list", f"{text}\n\n{note}", record)


def run(quick: bool = False) -> str:
    return record_and_print("filters", quick, measure(quick), render)


if __name__ == "__main__":
    main(run, __doc__)

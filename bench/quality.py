"""Retrieval quality on SciFact, CMRC 2018 and COVID-QA: our pipeline vs a BM25 baseline (bm25s), at
document level and chunk (answer) level, from the same run.

Ours = `rag_core.evaluation.run_evaluation` (Milvus Lite, local USE embedder, the default chunking
800/100), in dense, BM25 (Milvus full-text) and hybrid mode (the default fusion settings):
* document level: retrieve-k 100, max 1 chunk per document, return-n 20, so the evidence is a ranking of
  20 distinct documents; nDCG@10 / recall / MRR@10 over it.
* chunk level: the app's defaults (retrieve-k 20, return-n 5, max 2 chunks per document); answer
  recall = share of queries for which an evidence chunk contains an answer span (sets with offsets).
Baseline = bm25s (lower-cased words, English stop words, jieba for Chinese, no stemming):
* whole documents (title + text), top 100;
* the same chunks as ours, top 100 chunks -> document ranking (first occurrence); answer recall over the
  top 5 chunks (no per-document cap).
Latency p50 = one query end to end (ours: the document-level lookup; bm25s: one `retrieve`).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from bench.common import (
    RESULTS,
    BM25Baseline,
    load,
    log,
    need_set,
    percentiles,
    ratio,
    record_and_print,
    section,
    table,
)
from rag_core.bootstrap import factories
from rag_core.chunking import chunk_text
from rag_core.config import load_settings
from rag_core.embedding.local import LocalUSEEmbedder
from rag_core.evaluation import Grid, load_beir, run_evaluation, save_run
from rag_core.evaluation import metrics as m

SETS = (("scifact", "test"), ("cmrc2018", "dev"), ("covidqa", "test"))
DOC_POINT = (100, 20, 1)  # retrieve-k, return-n, cap
CHUNK_POINT = (20, 5, 2)
QUICK_LIMIT = 60


def baseline(eval_set: Any, chunk_size: int, overlap: int) -> dict[str, dict[str, Any]]:
    docs = list(eval_set.documents)
    doc_bm25 = BM25Baseline([d.text for d in docs])
    chunks = [(d.doc_id, c) for d in docs for c in chunk_text(d.text, chunk_size, overlap)]
    chunk_bm25 = BM25Baseline([c.text for _, c in chunks])
    out: dict[str, dict[str, Any]] = {}
    for label, engine in (("bm25s documents", doc_bm25), ("bm25s chunks", chunk_bm25)):
        records, latencies = [], []
        for q in eval_set.queries:
            t = time.perf_counter()
            hits = engine.search(q.text, 100)
            latencies.append((time.perf_counter() - t) * 1000)
            if engine is doc_bm25:
                ranking = [docs[i].doc_id for i, _ in hits]
                found = None
            else:
                ranking = m.document_ranking(chunks[i][0] for i, _ in hits)
                top = [m.ReturnedChunk(chunks[i][0], chunks[i][1].start, chunks[i][1].end, chunks[i][1].text)
                       for i, _ in hits[:5]]
                found = m.answer_found(top, q.answers, q.relevant) if q.answers else None
            records.append({**m.document_metrics(ranking, q.relevant), "answer_found": found})
        metrics = {k: m.mean(r[k] for r in records) for k in records[0] if k != "answer_found"}
        metrics["answer_recall"] = m.mean(float(r["answer_found"]) for r in records if r["answer_found"] is not None)
        metrics["latency_p50_ms"] = percentiles(latencies)[0]
        out[label] = metrics
    out["bm25s chunks"]["chunks"] = len(chunks)
    return out


SYSTEMS = ("bm25s, whole documents (baseline)", "bm25s, chunks (baseline)", "ours, dense", "ours, bm25", "ours, hybrid")


def measure(quick: bool = False, only: list[str] | None = None) -> dict:
    settings = load_settings(data_dir=RESULTS / "data", env={}, config_file=None)
    embedder = LocalUSEEmbedder()
    payload: dict = {"quick_limit": QUICK_LIMIT if quick else None, "sets": {}}
    for name, split in SETS:
        if only and name not in only:
            continue
        eval_set = load_beir(need_set(name), split=split, limit=QUICK_LIMIT if quick else None, name=name)
        log(f"quality: {name} ({len(eval_set.queries)} queries, {len(eval_set.documents)} documents) ...")
        started = time.perf_counter()
        base = baseline(eval_set, settings["chunk.max-size"], settings["chunk.overlap"])
        base_s = time.perf_counter() - started
        # Fusion settings (RRF k, weights) and chunking are the workbench defaults, whatever they are now.
        grid = Grid.from_settings(settings, mode=["dense", "bm25", "hybrid"],
                                  retrieve_k=[CHUNK_POINT[0], DOC_POINT[0]], return_n=[CHUNK_POINT[1], DOC_POINT[1]],
                                  max_chunks_per_document=[1, 2])
        last = [0.0]

        def progress(p: Any) -> None:
            if time.perf_counter() - last[0] > 30:
                last[0] = time.perf_counter()
                log(f"  {p.stage} {p.done}/{p.total} {p.detail}")

        result = run_evaluation(eval_set, grid, settings, factories=factories(), embedder=embedder, progress=progress)
        save_run(result, RESULTS / ("quick" if quick else "") / f"quality-{name}")
        by = {(p.point.mode, p.point.retrieve_k, p.point.return_n, p.point.max_chunks_per_document): p.metrics
              for p in result.points}
        keep = ("ndcg@10", "recall@1", "recall@10", "mrr@10", "latency_p50_ms")
        rows = {SYSTEMS[0]: {k: base["bm25s documents"][k] for k in keep} | {"answer_recall": None},
                SYSTEMS[1]: {k: base["bm25s chunks"][k] for k in keep}
                | {"answer_recall": base["bm25s chunks"].get("answer_recall")}}
        for mode in ("dense", "bm25", "hybrid"):
            rows[f"ours, {mode}"] = {k: by[(mode, *DOC_POINT)][k] for k in keep} | {
                "answer_recall": by[(mode, *CHUNK_POINT)]["answer_recall"]}
        index = result.index[0]
        payload["sets"][name] = {
            "split": split, "queries": len(eval_set.queries), "has_answers": eval_set.has_answers,
            "corpus": result.set_info["corpus"], "chunks": index["chunks"], "chunk_size": settings["chunk.max-size"],
            "overlap": settings["chunk.overlap"], "index_seconds": index["seconds"],
            "indexed_chunks": index["indexed_chunks"], "bm25s_seconds": base_s, "rows": rows}
        log(f"  done in {time.perf_counter() - started:.0f}s")
    return payload


def render(record: dict) -> str:
    sections = []
    for name, s in record["sets"].items():
        ref_doc, ref_chunk = s["rows"][SYSTEMS[0]], s["rows"][SYSTEMS[1]]
        rows = []
        for label in SYSTEMS:
            r = s["rows"][label]
            row = [
                label,
                r["ndcg@10"],
                r["recall@1"],
                r["recall@10"],
                r["mrr@10"],
                ratio(r["ndcg@10"], ref_doc["ndcg@10"]),
            ]
            if s["has_answers"]:
                row += [r["answer_recall"], ratio(r["answer_recall"], ref_chunk["answer_recall"])]
            rows.append(row + [r["latency_p50_ms"]])
        headers = ["system", "nDCG@10", "R@1", "R@10", "MRR@10", "nDCG ÷ bm25s docs"]
        if s["has_answers"]:
            headers += ["answer recall@5 chunks", "÷ bm25s chunks"]
        headers.append("p50 ms/query")
        corpus = s["corpus"]
        note = (
            f"{s['queries']} queries ({s['split']}), {corpus['documents']:,} documents"
            f"{' (sliced: relevant + ' + str(corpus['sample']) + ' sampled)' if corpus.get('sliced') else ''}, "
            f"{s['chunks']:,} chunks of {s['chunk_size']}/{s['overlap']}; index built in {s['index_seconds']:.0f} s "
            f"({s['indexed_chunks']:,} chunks embedded in this run; 0 = index reused); bm25s indexed and queried "
            f"in {s['bm25s_seconds']:.0f} s."
        )
        sections.append(f"**{name}** — {note}\n\n" + table(headers, rows))
    md = "\n\n".join(sections)
    md += ("\n\nDocument level: ours = evidence of retrieve-k 100 / return-n 20 / 1 chunk per document. "
           "Answer recall: ours = evidence at the app defaults (retrieve-k 20, return-n 5, 2 per document); "
           "bm25s = its top 5 chunks."
           + (f" Quick run: first {record['quick_limit']} queries, sliced corpora." if record["quick"] else ""))
    return section("Retrieval quality vs BM25 (bm25s)", md, record)


def run(quick: bool = False, only: list[str] | None = None) -> str:
    data = measure(quick, only)
    previous = load("quality", quick) if only else None
    if previous:  # one set re-measured: the others keep their figures (and say when they were measured)
        data["sets"] = {**previous["sets"], **data["sets"]}
    return record_and_print("quality", quick, data, render)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--set", action="append", choices=[s for s, _ in SETS], help="only this set (repeatable)")
    args = parser.parse_args()
    run(args.quick, args.set)

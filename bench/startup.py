"""`search` from the command line: what one process costs, and what the batch mode saves.

Every `python -m rag_core search` process pays start-up (imports, Milvus Lite start, embedding model load)
before a search of a few milliseconds. Measured here on the sample knowledge base, in the same run:

* one process per query (`search Q --json`, the default hybrid mode), wall time per process;
* one process per query in BM25 mode (no embedding model is loaded);
* one process for all the queries (`search --queries FILE --json`): wall time per query.

Variants are interleaved query by query, so load on the machine hits them alike. (Loading the model in a
thread while Milvus Lite starts was tried and measured here: ratio 0.96-0.99 against loading it after, on
this 2-core machine under load, so it was left out.)
    python -m bench.startup [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import REPO, emit, log, ratio, save, table

QUERIES = REPO / "examples" / "kb_queries.jsonl"


def _wall(argv: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:6])} ... failed: {done.stderr[-500:]}")
    return elapsed


def run(quick: bool = False) -> str:
    n = 4 if quick else 12
    queries = [json.loads(line)["query"] for line in QUERIES.read_text(encoding="utf-8").splitlines() if line][:n]
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        data = Path(tmp) / "data"
        log(f"startup: indexing the sample knowledge base into {data}")
        _wall([sys.executable, "-m", "rag_core", "--data-dir", str(data), "ingest", "examples/kb", "--quiet"])
        base = [sys.executable, "-m", "rag_core", "--data-dir", str(data), "search"]
        times: dict[str, list[float]] = {"hybrid": [], "bm25": []}
        for i, q in enumerate(queries, 1):
            times["hybrid"].append(_wall([*base, q, "--json"]))
            times["bm25"].append(_wall([*base, q, "--mode", "bm25", "--json"]))
            log(f"startup: query {i}/{len(queries)}")
        batch_file = Path(tmp) / "queries.jsonl"
        batch_file.write_text("".join(json.dumps({"query": q}, ensure_ascii=False) + "\n" for q in queries),
                              encoding="utf-8")
        batch = _wall([*base, "--queries", str(batch_file), "--json", "--quiet"])
    per_process = statistics.median(times["hybrid"])
    rows = [
        ["one process per query, hybrid", len(queries), per_process, None, None],
        ["one process per query, bm25 (no model)", len(queries), statistics.median(times["bm25"]), None, None],
        [f"one process for all {len(queries)} queries (--queries), hybrid", len(queries), batch / len(queries),
         per_process, ratio(batch / len(queries), per_process)],
    ]
    text = table(["search", "queries", "seconds per query (p50)", "baseline s", "ratio"], rows)
    note = ("Sample knowledge base (10 documents), Milvus Lite, local embedder. Seconds = wall time of the whole "
            "`python -m rag_core search` process (median over the queries); for --queries the process's wall time "
            "divided by the number of queries; its baseline is row 1, one process per query.")
    md = emit("`search` start-up: one process per query vs batch", f"{text}\n\n{note}")
    save("startup" + ("-quick" if quick else ""), {"rows": rows, "times": times, "batch_seconds": batch}, md)
    return md


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="4 queries instead of 12")
    run(parser.parse_args().quick)

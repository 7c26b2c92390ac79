"""Shared bench pieces: the machine, tables with ratios, timing, result files, corpora, BM25 tokens.

Result files: a full run writes `bench/results/<name>.json` (committed: the README tables and the app's
measured figures are rendered from them, see bench/publish.py); a `--quick` run writes
`bench/results/quick/<name>.json` (git-ignored), so a smoke run never replaces published figures.
"""

from __future__ import annotations

import json
import os
import platform
import re
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
SHARED_EVAL = Path(os.environ.get("RAG_EVAL_DIR") or REPO.parent / "shared" / "eval")


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        meminfo = Path("/proc/meminfo").read_text().splitlines()
        kb = int(next(line for line in meminfo if line.startswith("MemTotal")).split()[1])
        mem = f", {kb / 1024 / 1024:.0f} GB RAM"
    except (OSError, StopIteration, ValueError):
        pass
    return (f"{cpu}, {os.cpu_count()} cores{mem}; {platform.system()} {platform.release()}; "
            f"Python {platform.python_version()}")


def load_note() -> str:
    """The 1-minute load average: other work on the machine skews timings (reported with each table)."""
    try:
        return f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
    except OSError:
        return "load average unknown"


def fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        if value != value:  # NaN
            return "–"
        return f"{value:,.{digits}f}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def ratio(ours: float | None, baseline: float | None) -> float | None:
    if ours is None or baseline is None or baseline == 0:
        return None
    return ours / baseline


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], digits: int = 3) -> str:
    """A Markdown table (readable in a terminal, pasteable into the README)."""
    cells = [[fmt(v, digits) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    line = lambda vals: "| " + " | ".join(v.ljust(w) if i == 0 else v.rjust(w)  # noqa: E731
                                          for i, (v, w) in enumerate(zip(vals, widths))) + " |"
    sep = "|" + "|".join(("-" * (w + 2)) if i == 0 else ("-" * (w + 1) + ":") for i, w in enumerate(widths)) + "|"
    return "\n".join([line(headers), sep, *(line(r) for r in cells)])


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Fastest wall time of `repeat` calls (seconds) and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    return best, result


def percentiles(values_ms: Sequence[float]) -> tuple[float, float]:
    import numpy as np

    arr = np.asarray(values_ms, dtype=float)
    return float(np.percentile(arr, 50)), float(np.percentile(arr, 95))


def result_path(name: str, quick: bool = False) -> Path:
    return (RESULTS / "quick" if quick else RESULTS) / f"{name}.json"


def save_record(name: str, quick: bool, data: dict[str, Any], path: Path | None = None) -> dict[str, Any]:
    """Write a benchmark's result record (the figures plus machine, load and time) and return it."""
    record = {"benchmark": name, "quick": quick, "machine": machine(), "load": load_note(),
              "timestamp": datetime.now(UTC).isoformat(timespec="seconds"), **data}
    path = path or result_path(name, quick)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, ensure_ascii=False, indent=1, default=str) + "\n", encoding="utf-8")
    return record


def load(name: str, quick: bool = False, path: Path | None = None) -> dict[str, Any] | None:
    path = path or result_path(name, quick)
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def record_and_print(name: str, quick: bool, data: dict[str, Any], render: Callable[[dict[str, Any]], str],
                     path: Path | None = None) -> str:
    """Save a run's figures as its result record, print the rendered tables and return them."""
    text = render(save_record(name, quick, data, path))
    print(text, flush=True)
    return text


def main(run: Callable[[bool], Any], doc: str | None) -> None:
    """`python -m bench.NAME [--quick]`."""
    import argparse

    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small inputs: a smoke run (bench/results/quick/)")
    run(parser.parse_args().quick)


def section(title: str, body: str, record: dict[str, Any]) -> str:
    """A rendered result: heading, table(s) and notes, and the machine and load it was measured on."""
    return f"#### {title}\n\n{body}\n\n_{record['machine']}; {record['load']} at the end of the run._\n"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def need_set(name: str) -> Path:
    folder = SHARED_EVAL / name
    if not (folder / "corpus.jsonl").is_file():
        raise SystemExit(f"{folder} not found: set RAG_EVAL_DIR to the folder holding the BEIR sets.")
    return folder


def scifact_queries(n: int) -> list[str]:
    """The first `n` SciFact query texts: the latency benchmarks' workload."""
    with (need_set("scifact") / "queries.jsonl").open(encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in fh][:n]


# ---------------------------------------------------------------------------------------- BM25 baseline
_WORD = re.compile(r"\w+", re.UNICODE)
_CJK = re.compile(r"[\u3400-\u9fff]")


def bm25_tokens(text: str) -> list[str]:
    """Lower-cased words without English stop words; Chinese segmented with jieba (as Milvus's analyzer
    does), no stemming."""
    from bm25s.stopwords import STOPWORDS_EN

    text = text.lower()
    if _CJK.search(text):
        import jieba

        jieba.setLogLevel(60)
        words = [w for w in jieba.lcut(text) if _WORD.fullmatch(w)]
    else:
        words = _WORD.findall(text)
    stop = set(STOPWORDS_EN)
    return [w for w in words if w not in stop]


class BM25Baseline:
    """bm25s over a list of texts; `search` returns (index, score) best first, matches only."""

    def __init__(self, texts: Sequence[str]) -> None:
        import bm25s

        self.retriever = bm25s.BM25()
        self.retriever.index([bm25_tokens(t) or ["\x00"] for t in texts], show_progress=False)
        self.size = len(texts)

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        tokens = bm25_tokens(query) or ["\x00"]
        ids, scores = self.retriever.retrieve([tokens], k=min(k, self.size), show_progress=False)
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0]) if s > 0]


def evaluate_kb(kbs: Any, name: str, eval_set: Any, modes: Sequence[str]) -> Any:
    """An evaluation run of knowledge base `name` as it is (its own defaults), in search `modes`, through the one
    lookup path (`run_evaluation(knowledge_bases=...)`): the points, one per mode."""
    from rag_core.bootstrap import factories
    from rag_core.evaluation import Grid, run_evaluation

    wb = kbs.open(name)
    try:
        return run_evaluation(eval_set, Grid.from_settings(wb.settings, mode=list(modes)), kbs.settings,
                              factories=factories(env={}), knowledge_bases=[wb])
    finally:
        wb.close()

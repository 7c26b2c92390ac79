"""`python -m rag_core eval`: run or sweep an evaluation from the command line.

    python -m rag_core eval                                  # the sample KB's queries over examples/kb
    python -m rag_core eval scifact --sample 100             # a bundled BEIR set: a random 100 (seed 0)
    python -m rag_core eval cmrc2018 --sample 200 --mode dense,bm25,hybrid --retrieve-k 20,50 --return-n 5,10
    python -m rag_core eval my_queries.csv --live            # a hand-written set against the knowledge base
    python -m rag_core eval my_queries.jsonl --corpus docs/  # ... against a folder, indexed in isolation

Every numeric or choice option takes a comma-separated list; the run covers every combination.
Use --sample N (not --limit N) for a quick run that says something about the whole set: sets are
often ordered by document, so the first N queries can touch only a few documents.
The table goes to stdout (or the whole run as JSON with --json); the progress bar to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from ..config import KEYS, Settings
from ..errors import EvaluationError
from .params import LABELS, PARAM_KEYS, PARAM_SETTINGS, parse_values
from .report import DEFAULT_PARAMS, shown_metrics

SHORT = {"max_chunks_per_document": "cap", "retrieve_k": "k", "return_n": "n", "chunk_size": "size",
         "dense_weight": "w_dense", "bm25_weight": "w_bm25", "latency_p50_ms": "p50_ms", "latency_p95_ms": "p95_ms",
         "answer_recall": "ans_rec", "raw_answer_recall": "raw_ans", "answers_lost": "ans_lost",
         "distinct_docs": "docs", "span_recall@1": "span@1", "span_recall@5": "span@5", "span_recall@10": "span@10",
         "raw_span_recall@20": "raw_span@20"}


def _list_of(kind: Callable[[str], Any], name: str,
             choices: Sequence[str] | None = None) -> Callable[[str], list[Any]]:
    """An argparse type for a comma-separated list, parsed by the one parser the page uses too."""
    def parse(text: str) -> list[Any]:
        try:
            return parse_values(text, kind, name, choices)
        except EvaluationError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def format_table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    def show(value: Any) -> str:
        if value is None:
            return "-"
        if isinstance(value, float):
            return f"{value:.3f}" if abs(value) < 100 else f"{value:.1f}"
        return str(value)

    header = [SHORT.get(c, c) for c in columns]
    cells = [[show(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(h), *(len(row[i]) for row in cells)) for i, h in enumerate(header)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(header, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


def _progress(enabled: bool):  # noqa: ANN202
    if not enabled:
        return None, lambda: None
    from tqdm import tqdm

    bar = tqdm(total=0, file=sys.stderr, dynamic_ncols=True, unit="step")
    state = {"stage": "", "detail": ""}

    def update(p) -> None:  # noqa: ANN001
        if (p.stage, p.total) != (state["stage"], bar.total):
            state["stage"] = p.stage
            bar.unit = "doc" if p.stage == "indexing" else "query"
            bar.reset(total=p.total)
        if p.detail != state["detail"]:  # the combination being run changes during a sweep
            state["detail"] = p.detail
            bar.set_description(p.detail[:60], refresh=False)
        bar.n = p.done
        bar.refresh()

    return update, bar.close


def cmd_eval(args: argparse.Namespace, settings: Settings) -> int:
    from ..bootstrap import build_embedder
    from .datasets import load_set
    from .results import new_run_dir, runs_dir, save_run
    from .runner import Grid, run_evaluation

    if args.embedder:
        settings = settings.with_overrides({"embedding.provider": args.embedder}, "--embedder")
    eval_set = load_set(args.eval_set, split=args.split, limit=args.limit, sample=args.sample, seed=args.seed,
                        corpus_sample=args.corpus_sample, corpus=args.corpus, live=args.live)
    grid = Grid.from_settings(settings, **{k: getattr(args, k) for k in PARAM_KEYS})
    progress, close = _progress(not args.quiet)
    try:
        run = run_evaluation(eval_set, grid, settings, embedder=build_embedder(settings), live=args.live,
                             reindex=args.reindex, progress=progress)
    finally:
        close()
    paths = {} if args.no_save else save_run(run, Path(args.out) if args.out else new_run_dir(runs_dir(settings),
                                                                                                eval_set.name))
    if args.json:
        json.dump({**run.to_dict(), "files": {k: str(v) for k, v in paths.items()}}, sys.stdout,
                  ensure_ascii=False, indent=1)
        sys.stdout.write("\n")
        return 0
    corpus = run.set_info.get("corpus", {})
    print(f"{eval_set.name}: {len(eval_set.queries)} queries{_subset(run.set_info.get('queries') or {})}"
          f"{' (split ' + str(run.set_info['split']) + ')' if run.set_info.get('split') else ''}, "
          f"corpus {corpus.get('documents') or 'live'} documents{' (sliced)' if corpus.get('sliced') else ''}, "
          f"embedder {run.config['embedder']}")
    for idx in run.index:
        print(f"  index {idx['collection']}: {idx['documents']} docs, {idx['chunks']} chunks "
              f"(chunk {idx['chunk_size']}/{idx['overlap']}; {idx['indexed_chunks']} chunks embedded in "
              f"{idx['seconds']:.1f}s)")
    rows = run.summary_rows()
    print()
    print(format_table(rows, [*(grid.varying() or DEFAULT_PARAMS), *shown_metrics(rows)]))
    for note in run.skipped:
        print(f"skipped: {note}")
    for warning in run.warnings[:10]:
        print(f"warning: {warning}", file=sys.stderr)
    if len(run.warnings) > 10:
        print(f"warning: ... and {len(run.warnings) - 10} more (see run.json)", file=sys.stderr)
    if paths:
        print(f"\nsaved {paths['json'].parent}/ (run.json, summary.csv, queries.csv)")
    return 0


def _subset(subset: dict[str, Any]) -> str:
    if subset.get("rule") == "sample":
        return f" (random sample of {subset['of']}, seed {subset['seed']})"
    if subset.get("rule") == "first":
        return " (the first in file order: prefer --sample N)"
    return ""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `eval` command to `python -m rag_core`."""
    p = subparsers.add_parser(
        "eval", help="evaluate retrieval on a labelled set (document, answer and span metrics, sweeps)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("eval_set", nargs="?", default="sample", metavar="SET",
                   help="bundled set (sample, scifact, cmrc2018, covidqa), a BEIR folder, or a .jsonl/.csv file")
    p.add_argument("--split", help="BEIR split (default: test, else dev)")
    p.add_argument("--sample", type=int, metavar="N",
                   help="a seeded random sample of N queries (recorded in the run); the corpus slice follows them")
    p.add_argument("--seed", type=int, help="seed of --sample (default 0): the same seed, the same queries")
    p.add_argument("--limit", type=int, metavar="N",
                   help="only the first N queries in file order (sets are often ordered by document: prefer --sample)")
    p.add_argument("--corpus-sample", type=int,
                   help="non-relevant documents added to the corpus slice "
                        "(default with --sample/--limit N: max(100, 10N))")
    p.add_argument("--corpus", help="folder of documents for a .jsonl/.csv set (indexed in isolation)")
    p.add_argument("--live", action="store_true", help="evaluate against the configured knowledge base")
    p.add_argument("--embedder", choices=KEYS["embedding.provider"].choices,
                   help="embedding provider (default: the embedding.provider setting)")
    for name in PARAM_KEYS:
        key = KEYS[PARAM_SETTINGS[name]]
        kind = {int: int, float: float}.get(key.type, str)
        metavar = "|".join(key.choices) + "[,...]" if key.choices else ("W[,W...]" if kind is float else "N[,N...]")
        p.add_argument("--" + name.replace("_", "-"), dest=name, metavar=metavar,
                       type=_list_of(kind, LABELS[name], key.choices or None),
                       help=f"{key.help.rstrip('.')}; a comma-separated list sweeps it; "
                            f"default: the setting {key.name}")
    p.add_argument("--reindex", action="store_true", help="rebuild the isolated index even if it is complete")
    p.add_argument("--out", help="folder for run.json / summary.csv / queries.csv "
                                 "(default <data-dir>/eval/runs/<time>-<set>)")
    p.add_argument("--no-save", action="store_true", help="print only; write no files")
    p.add_argument("--json", action="store_true", help="print the whole run as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_eval)

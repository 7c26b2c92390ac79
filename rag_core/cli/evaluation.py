"""`python -m rag_core eval`: run or sweep an evaluation from the command line.

    python -m rag_core eval                                  # the sample KB's queries over examples/kb
    python -m rag_core eval scifact --sample 100             # a bundled BEIR set: a random 100 (seed 0)
    python -m rag_core eval cmrc2018 --sample 200 --mode dense,bm25,hybrid --retrieve-k 20,50 --return-n 5,10
    python -m rag_core eval my_queries.csv --live            # a hand-written set against the knowledge base
    python -m rag_core eval my_queries.jsonl --corpus docs/  # ... against a folder, indexed in isolation
    python -m rag_core eval my_queries.jsonl --kb small,wide # ... against two knowledge bases, each as it is
    python -m rag_core eval --kb small,wide --rerank none,configured  # ... each without and with the reranker
    python -m rag_core compare-runs RUN_A RUN_B#2            # two saved runs (or rows) by id, query by query
    python -m rag_core export-run RUN out/                   # a saved run's run.json and CSV files, wherever kept
    python -m rag_core eval generate --size 50 --name biz-50        # a test set from the knowledge base (offline)
    python -m rag_core eval biz-50 --kb biz,small                   # ... run by its name
    python -m rag_core eval answers biz-50 --offline                # the agent's answers on it, scored
    python -m rag_core eval tune biz --set reviewed-40 --apply       # biz's search settings tuned on its own set

Every numeric or choice option takes a comma-separated list; the run covers every combination.
--kb runs the set against existing knowledge bases (their documents, not the set's corpus: the set's
relevant ids must be their doc_ids), each with its own chunking and embedder and, for the options not
given, its own search settings. --rerank none,PROVIDER runs every combination without and with the
reranker (configured = the rerank.provider setting; rerank.model, rerank.base-url and the key's
variable configure it). With several rows, the queries each row answers better than its neighbour
(a row that differs in one option) are counted: the per-query wins and losses.
Use --sample N (not --limit N) for a quick run that says something about the whole set: sets are
often ordered by document, so the first N queries can touch only a few documents.
The table goes to stdout (or the whole run as JSON with --json); the progress bar to stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..config import KEYS, Settings
from ..errors import EvaluationError
from ..evaluation.params import LABELS, PARAM_KEYS, PARAM_SETTINGS, choices_of, parse_kb_names, parse_values
from ..evaluation.report import (
    DEFAULT_PARAMS,
    PER_QUERY_METRICS,
    point_comparisons,
    run_notes,
    shown_metrics,
    wins_losses,
)
from ..kb.settings import with_measured_settings
from .output import format_table, print_json, stage_progress_bar
from .runs import save_eval_run, saved_fields, saved_line

SHORT = {"max_chunks_per_document": "cap", "retrieve_k": "k", "return_n": "n", "chunk_size": "size",
         "dense_weight": "w_dense", "bm25_weight": "w_bm25", "latency_p50_ms": "p50_ms", "latency_p95_ms": "p95_ms",
         "answer_recall": "ans_rec", "raw_answer_recall": "raw_ans", "answers_lost": "ans_lost",
         "distinct_docs": "docs", "span_recall@1": "span@1", "span_recall@5": "span@5", "span_recall@10": "span@10",
         "raw_span_recall@20": "raw_span@20", "answer_in_context": "ans_ctx", "span_recall_context": "span_ctx",
         "context_tokens_used": "ctx_used", "expand_neighbours": "nbrs", "block_tokens": "blk_tok",
         "context_tokens": "ctx_tok"}


def _list_of(kind: Callable[[str], Any], name: str,
             choices: Sequence[str] | None = None) -> Callable[[str], list[Any]]:
    """An argparse type for a comma-separated list, parsed by the one parser the page uses too."""
    def parse(text: str) -> list[Any]:
        try:
            return parse_values(text, kind, name, choices)
        except EvaluationError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def _list_of_kbs(text: str) -> list[str]:
    try:
        return parse_kb_names(text)
    except EvaluationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cmd_eval(args: argparse.Namespace, settings: Settings) -> int:
    from ..bootstrap import build_embedder, build_rewriter, build_test_sets, factories
    from ..evaluation.kbs import opened_knowledge_bases
    from ..evaluation.runner import Grid, run_evaluation
    from ..evaluation.testsets import load_set

    if args.kbs and args.corpus:
        raise EvaluationError("--kb and --corpus exclude each other: --kb searches the knowledge bases' own "
                              "documents (ingest the folder into them first).")
    if args.kbs and args.embedder:
        raise EvaluationError("--embedder does not apply with --kb: each knowledge base is searched with its own "
                              "embedder (make one with another embedder with `kb copy --embedder`).")
    if args.embedder:
        settings = settings.with_overrides({"embedding.provider": args.embedder}, "--embedder")
    if args.filter:  # every lookup of the run is scoped, as `search --filter` (a knowledge base's default yields)
        from ..scope import parse_scope

        parse_scope(args.filter)
        settings = replace(settings.with_overrides({"rag.default-filter": " ".join(args.filter)}, "--filter"),
                           per_command=settings.per_command | {"rag.default-filter"})
    live = args.live or bool(args.kbs)
    sets = build_test_sets(settings)
    try:
        eval_set = load_set(args.eval_set, split=args.split, limit=args.limit, sample=args.sample, seed=args.seed,
                            corpus_sample=args.corpus_sample, corpus=args.corpus, live=live, saved=sets)
    finally:
        sets.close()
    live = live or eval_set.documents is None  # a saved test set is made from, and run on, a knowledge base
    if not live:  # indexed here with the settings' embedder: the fusion measured for it, unless set
        settings, note = with_measured_settings(settings, "the fusion measured for the embedder")
        if note:
            print(f"note: {note}", file=sys.stderr)
    grid = Grid.from_settings(settings, **{k: getattr(args, k) for k in PARAM_KEYS})
    if args.by is not None and args.by not in PER_QUERY_METRICS:
        raise EvaluationError(f"--by {args.by!r}: use one of {', '.join(PER_QUERY_METRICS)}.")
    with stage_progress_bar(not args.quiet) as progress:
        if live:  # the knowledge bases as they are: the named ones, or the one --kb before `eval` chooses
            with opened_knowledge_bases(settings, args.kbs or [settings.kb_name], factories()) as workbenches:
                run = run_evaluation(eval_set, grid, settings, factories=factories(), reindex=args.reindex,
                                     progress=progress, knowledge_bases=workbenches, rewriter=build_rewriter(settings))
        else:
            run = run_evaluation(eval_set, grid, settings, factories=factories(), embedder=build_embedder(settings),
                                 reindex=args.reindex, progress=progress, rewriter=build_rewriter(settings))
    saved = None if args.no_save else save_eval_run(settings, run, args.out)
    comparisons = point_comparisons(run.to_dict(), args.by)
    if args.json:
        print_json({**run.to_dict(), "comparisons": comparisons, **saved_fields(saved)}, indent=1)
        return 0
    corpus = run.set_info.get("corpus", {})
    print(f"{eval_set.name}: {len(eval_set.queries)} queries{_subset(run.set_info.get('queries') or {})}"
          f"{' (split ' + str(run.set_info['split']) + ')' if run.set_info.get('split') else ''}, "
          f"corpus {corpus.get('documents') or 'live'} documents{' (sliced)' if corpus.get('sliced') else ''}, "
          f"embedder {run.config['embedder']}")
    for idx in run.index:
        if "kb" in idx:
            print(f"  knowledge base {idx['kb']}: {idx['documents']} docs, {idx['chunks']} chunks "
                  f"(chunk {idx['chunk_size']}/{idx['overlap']}, embedder {idx['embedder']})")
            continue
        print(f"  index {idx['collection']}: {idx['documents']} docs, {idx['chunks']} chunks "
              f"(chunk {idx['chunk_size']}/{idx['overlap']}; {idx['indexed_chunks']} chunks embedded in "
              f"{idx['seconds']:.1f}s)")
    rows = run.summary_rows()
    print()
    varying = run.config["varying"]
    print(format_table([{"#": i + 1, **r} for i, r in enumerate(rows)],
                       ["#", *(varying or DEFAULT_PARAMS), *shown_metrics(rows)], SHORT))
    print_comparisons(comparisons)
    for note in run_notes(run.to_dict()):
        print(f"note: {note}")
    for note in run.skipped:
        print(f"skipped: {note}")
    for warning in run.warnings[:10]:
        print(f"warning: {warning}", file=sys.stderr)
    if len(run.warnings) > 10:
        print(f"warning: ... and {len(run.warnings) - 10} more (see run.json)", file=sys.stderr)
    if saved is not None:
        print(f"\n{saved_line(saved)}")
    return 0


MAX_PRINTED_PAIRS = 12


def print_comparisons(comparisons: list[dict[str, Any]]) -> None:
    if not comparisons:
        return
    print(f"\nper query (by {comparisons[0]['metric']}): the queries each row answers better")
    for c in comparisons[:MAX_PRINTED_PAIRS]:
        n = c["counts"]
        print(f"  {c['B']} better {n['b_better']} / {c['A']} better {n['a_better']} / same {n['ties']}"
              + (f" ({n['unpaired']} unpaired)" if n["unpaired"] else ""))
    if len(comparisons) > MAX_PRINTED_PAIRS:
        print(f"  ... and {len(comparisons) - MAX_PRINTED_PAIRS} more pairs (--json, or compare-runs)")
    if len(comparisons) == 1:
        print_outcomes(comparisons[0])


def print_outcomes(c: dict[str, Any], limit: int = 10) -> None:
    """The queries each side answers better, largest differences first."""
    for side, key in (("B", "b_better"), ("A", "a_better")):
        if c[key]:
            print(f"  {c[side]} better:")
        for o in c[key][:limit]:
            print(f"    {o['A']:.3f} -> {o['B']:.3f}  {o['query_id']}: {o['query'][:70]}")
        if len(c[key]) > limit:
            print(f"    ... and {len(c[key]) - limit} more (--json)")


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    from ..bootstrap import build_eval_runs

    store = build_eval_runs(settings)
    try:
        paths = store.export(args.run, args.out, "answers" if args.answers else "retrieval")
    finally:
        store.close()
    print(f"wrote {Path(args.out)}/ ({', '.join(p.name for p in paths.values())})")
    return 0


def cmd_compare(args: argparse.Namespace, settings: Settings) -> int:
    from ..bootstrap import build_eval_runs
    from ..evaluation.report import compare_best
    from ..evaluation.results import load_point

    store = build_eval_runs(settings)
    try:
        (a_run, a_index), (b_run, b_index) = load_point(args.a, store.load), load_point(args.b, store.load)
    finally:
        store.close()
    a_point, b_point = a_run["points"][a_index], b_run["points"][b_index]
    labels = (f"{args.a.split('#')[0]}#{a_index + 1}", f"{args.b.split('#')[0]}#{b_index + 1}")
    result = wins_losses(a_point["queries"], b_point["queries"], args.by, labels)
    diff = compare_best([{**a_point["params"], **a_point["metrics"]}], [{**b_point["params"], **b_point["metrics"]}])
    if args.json:
        print_json({"metrics": diff, "A_params": a_point["params"], "B_params": b_point["params"],
                    **result.to_dict()}, indent=1)
        return 0
    for side, point, label in (("A", a_point, labels[0]), ("B", b_point, labels[1])):
        shown = {k: v for k, v in point["params"].items() if v is not None}
        print(f"{side}: {label}  " + " ".join(f"{k}={v}" for k, v in shown.items()))
    print()
    print(format_table(diff, ["metric", "A", "B", "B − A"], SHORT))
    print(f"\nper query: {result.summary()}")
    print_outcomes({"A": "A", "B": "B", **result.to_dict()}, limit=args.limit)
    return 0


def _subset(subset: dict[str, Any]) -> str:
    if subset.get("rule") == "sample":
        return f" (random sample of {subset['of']}, seed {subset['seed']})"
    if subset.get("rule") == "first":
        return " (the first in file order: prefer --sample N)"
    return ""


class EvalParser(argparse.ArgumentParser):
    """The `eval` parser. Its optional SET positional leaves no room for argparse subcommands, so `eval generate`
    and `eval answers` are told apart here: when the first argument names one, its own parser reads the rest."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.subcommands: dict[str, argparse.ArgumentParser] = {}

    def parse_known_args(self, args=None, namespace=None):  # noqa: ANN001, ANN201 - argparse's signature
        args = list(sys.argv[1:] if args is None else args)
        if args and args[0] in self.subcommands:
            return self.subcommands[args[0]].parse_known_args(args[1:], namespace)
        return super().parse_known_args(args, namespace)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `eval` command (and `eval generate`, `eval answers`) to `python -m rag_core`."""
    from .testsets import build_parsers
    from .tune import build_parser as tune_parser

    own, subparsers._parser_class = subparsers._parser_class, EvalParser  # noqa: SLF001 - one parser of its class
    try:
        p = subparsers.add_parser(
            "eval", help="evaluate retrieval on a labelled set (document, answer and span metrics, sweeps); "
                         "`eval generate` makes a test set from a knowledge base, `eval answers` scores the agent",
            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    finally:
        subparsers._parser_class = own  # noqa: SLF001
    p.subcommands = {**build_parsers(p.prog), "tune": tune_parser(p.prog)}
    p.add_argument("eval_set", nargs="?", default="sample", metavar="SET",
                   help="bundled set (sample, sample-conversations, scifact, cmrc2018, covidqa), a saved test set's "
                        "name, a BEIR folder, or a .jsonl/.csv file; `eval generate --help`, `eval answers --help` and "
                        "`eval tune --help` for the subcommands")
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
    p.add_argument("--live", action="store_true",
                   help="evaluate against the knowledge base (the one --kb before `eval` chooses, else the default)")
    p.add_argument("--kb", dest="kbs", metavar="NAME[,NAME...]", type=_list_of_kbs,
                   help="evaluate against these knowledge bases, one after the other, each as it is (its chunking, "
                        "embedder and search settings); the set's relevant ids must be their doc_ids")
    p.add_argument("--embedder", choices=KEYS["embedding.provider"].choices,
                   help="embedding provider (default: the embedding.provider setting)")
    for name in PARAM_KEYS:
        key = KEYS[PARAM_SETTINGS[name]]
        kind = {int: int, float: float}.get(key.type, str)
        choices = choices_of(name)
        metavar = "|".join(choices) + "[,...]" if choices else ("W[,W...]" if kind is float else "N[,N...]")
        p.add_argument("--" + name.replace("_", "-"), dest=name, metavar=metavar,
                       type=_list_of(kind, LABELS[name], choices or None),
                       help=f"{key.help.rstrip('.')}; a comma-separated list sweeps it; "
                            f"default: the setting {key.name}")
    p.add_argument("--filter", action="append", metavar="KEY=VALUE",
                   help="scope every lookup to documents whose metadata match, as `search --filter` (repeatable)")
    p.add_argument("--reindex", action="store_true", help="rebuild the isolated index even if it is complete")
    p.add_argument("--out", help="folder for run.json / summary.csv / queries.csv (default: the saved runs, "
                                 "<data-dir>/eval/runs/<time>-<set>, or the shared database with database.url)")
    p.add_argument("--no-save", action="store_true", help="print only; write no files")
    p.add_argument("--json", action="store_true", help="print the whole run as JSON")
    p.add_argument("--by", metavar="METRIC",
                   help=f"per-query metric of the wins and losses between rows ({', '.join(PER_QUERY_METRICS)}; "
                        "default: the first the set has values for)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_eval)

    p = subparsers.add_parser(
        "compare-runs", help="compare two saved evaluation runs (or two rows of one): metrics and per-query wins",
        description="The metrics of two sweep points side by side, and which queries each answers better by a "
                    "per-query metric (wins, losses, ties). A point is a saved run's id (as `eval` printed it) or a "
                    "run's folder (or its run.json), optionally with #N for its N-th row (default: its best row by "
                    "nDCG@10).")
    p.add_argument("a", metavar="RUN[#N]", help="point A, e.g. 20261130T101500Z-sample#1 or data/eval/runs/"
                                                "20261130T101500Z-sample#1")
    p.add_argument("b", metavar="RUN[#N]", help="point B (the same run with another #N compares two rows)")
    p.add_argument("--by", metavar="METRIC", help=f"per-query metric ({', '.join(PER_QUERY_METRICS)}; default: the "
                                                  "first both have values for)")
    p.add_argument("--limit", type=int, default=20, metavar="N", help="queries listed per side (default 20)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON (every query)")
    p.set_defaults(func=cmd_compare)

    p = subparsers.add_parser(
        "export-run", help="write a saved evaluation run's run.json, summary.csv and queries.csv into a folder",
        description="The files of a saved run, wherever it is kept (a folder under the data folder, or the shared "
                    "database with database.url): run.json, and the CSV files made from it.")
    p.add_argument("run", metavar="RUN", help="a saved run's id (as `eval` printed it), or a run's folder")
    p.add_argument("out", metavar="DIR", help="the folder to write them into (made)")
    p.add_argument("--answers", action="store_true", help="RUN is an answer run (`eval answers`)")
    p.set_defaults(func=cmd_export)

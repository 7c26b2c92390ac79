"""`python -m rag_core eval generate` and `eval answers`: test sets made from a knowledge base, and the agent's
answers scored on a set.

    python -m rag_core eval generate --size 50 --name biz-50                 # offline: no key needed
    python -m rag_core eval generate --kb small --size 30 --generator model --out q.jsonl
    python -m rag_core eval generate --size 40 --follow-up-share 0.25 --name biz-conv   # 10 follow-up items
    python -m rag_core eval biz-50 --kb biz,small                            # a saved set works by its name
    python -m rag_core eval answers biz-50 --sample 20 --offline             # the agent's answers, scored

`generate` samples chunks over the documents (seeded; --per-doc-max caps one document's share) and writes a
question per chunk with the answer quoted from it: with a chat model (eval.generator-model, else the chat
model) or offline (questions made by templates from the documents' own words, which flatter BM25). Every
rejection is counted by reason; the set appears only once complete. --follow-up-share makes a share of the items
follow-ups: a question that only makes sense after the first question kept as its history (none by default).
`answers` runs the chat page's agent on every item that is not dropped and scores what it says: answer found, F1,
citations valid, citation support, refusals, and faithfulness when eval.judge-model names a judge.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..config import Settings
from ..errors import EvaluationError
from .audit import record
from .output import format_table, print_json, stage_progress_bar

SUBCOMMANDS = ("generate", "answers")
ITEM_COLUMNS = ["id", "answer_found", "f1", "cites", "citations_valid", "citation_support", "refused",
                "faithfulness", "query"]
SHORT = {"answer_found": "found", "citations_valid": "valid", "citation_support": "support",
         "faithfulness": "faithful"}
SUMMARY = ("answer_found", "f1", "cites", "citations_valid", "citation_support", "refusals", "false_refusals",
           "faithfulness")


def open_test_set(settings: Settings, spec: str) -> Any:
    """A test set by its saved name, a .jsonl/.csv path, or "sample" (the bundled hand-labelled set)."""
    from ..bootstrap import build_test_sets
    from ..evaluation.datasets import bundled_sets
    from ..evaluation.testsets import read_test_set

    bundled = bundled_sets()
    if spec in bundled and bundled[spec].is_file():
        return read_test_set(bundled[spec], spec)
    if Path(spec).suffix.lower() in (".jsonl", ".csv") or "/" in spec:
        return read_test_set(spec)
    sets = build_test_sets(settings)
    try:
        return sets.load(spec)
    finally:
        sets.close()


def cmd_generate(args: argparse.Namespace, settings: Settings) -> int:
    from ..bootstrap import build_eval_model, build_test_sets
    from ..evaluation.generate import generate_test_set
    from ..evaluation.testsets import check_name
    from .workbench import workbench

    if args.name is not None:
        check_name(args.name)  # before any work: a bad name is refused at once
    if args.out is not None and Path(args.out).suffix.lower() != ".jsonl":
        raise EvaluationError(f"--out {args.out}: give a .jsonl file (its description goes beside it, .meta.json).")
    settings = settings.for_kb(args.target_kb) if args.target_kb else settings
    model = build_eval_model(settings, "generator") if args.generator == "model" else None
    with workbench(settings) as wb, stage_progress_bar(not args.quiet) as progress:
        result = generate_test_set(wb.store, size=args.size, generator=args.generator, model=model,
                                   lookup=wb.retriever.lookup, seed=args.seed, per_doc_max=args.per_doc_max,
                                   lang=args.lang, follow_ups=args.follow_up_share, kb_name=settings.kb_name,
                                   progress=progress, **({"avoid_rare": True} if args.avoid_rare else {}))
    if args.name is not None:
        sets = build_test_sets(settings)
        try:
            path: str | Path = sets.save(args.name, result.items, result.meta())
        finally:
            sets.close()
        record(settings, "testsets.create", settings.kb_name, args.name,
               {"items": len(result.items), "generator": result.generator})
    else:
        path = result.write(args.out)
    if args.json:
        print_json({"path": str(path), **result.meta()}, indent=1)
    else:
        rejected = ", ".join(f"{reason.replace('_', ' ')} {n}" for reason, n in result.rejected.items()) or "none"
        meta = result.meta()
        follow_ups = f", {meta['follow_ups']} follow-ups" if meta["follow_ups"] else ""
        print(f"{path}: {len(result.items)} items ({meta['should_not_answer']} should not be answerable{follow_ups}) "
              f"from {result.knowledge_base or 'the knowledge base'} ({result.documents} documents, {result.tried} "
              f"chunks tried), generator {result.generator}"
              f"{' ' + result.model if result.model else ''}, seed {result.seed}, {result.seconds:.1f}s")
        print(f"rejected: {rejected}")
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def cmd_answers(args: argparse.Namespace, settings: Settings) -> int:
    from ..bootstrap import build_agent, build_eval_model
    from ..evaluation.answers import score_answers
    from .runs import save_eval_run, saved_fields, saved_line
    from .workbench import workbench

    test_set = open_test_set(settings, args.test_set)
    settings = settings.for_kb(args.target_kb) if args.target_kb else settings
    judge = build_eval_model(settings, "judge")  # before --offline: an offline agent can still be judged
    if args.offline:
        settings = settings.with_overrides({"chat.provider": "offline"}, "--offline")
    with workbench(settings) as wb, stage_progress_bar(not args.quiet) as progress:
        run = score_answers(build_agent(wb, record=False), test_set, judge=judge, sample=args.sample, seed=args.seed,
                            progress=progress)
    saved = None if args.no_save else save_eval_run(settings, run, args.out)
    if args.json:
        print_json({**run.to_dict(), **saved_fields(saved)}, indent=1)
        return 0
    s = run.summary
    print(f"{run.set_name}: {s['items']} items ({s['unanswerable']} should not be answerable), agent "
          f"{run.config['agent']}, {run.seconds:.1f}s")
    print()
    rows = [{**r, "query": r["query"][:50]} for r in run.items]
    print(format_table(rows, [c for c in ITEM_COLUMNS if c != "faithfulness" or judge is not None], SHORT))
    print()
    for name in SUMMARY:
        value = s[name]
        if name == "faithfulness" and judge is None:
            shown = f"absent: {s['faithfulness_note']}"
        else:
            shown = "-" if value is None else f"{value:.3f}"
        print(f"{name:>17}: {shown}")
    for warning in run.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if saved is not None:
        print(f"\n{saved_line(saved)}")
    return 0


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is less than 1")
    return value


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{value:g} is not between 0 and 1")
    return value


def build_parsers(prog: str) -> dict[str, argparse.ArgumentParser]:
    """The parsers of `eval generate` and `eval answers` (the `eval` parser hands its arguments over when the
    first one names a subcommand: see evaluation.EvalParser)."""
    from ..evaluation.generate import GENERATORS
    from ..evaluation.generate.sampling import LANGS

    fmt = argparse.RawDescriptionHelpFormatter
    g = argparse.ArgumentParser(prog=f"{prog} generate", formatter_class=fmt, description=__doc__)
    g.add_argument("--kb", dest="target_kb", metavar="NAME",
                   help="the knowledge base to generate from (default: the one --kb before `eval` chooses, else the "
                        "default)")
    g.add_argument("--size", type=_positive, required=True, metavar="N", help="items to make")
    g.add_argument("--seed", type=int, default=0, help="sampling seed (default 0): the same seed, knowledge base and "
                                                      "generator give the same set")
    g.add_argument("--per-doc-max", type=_positive, metavar="M", help="at most M items from one document")
    g.add_argument("--lang", choices=LANGS, default="auto", help="question language (default: the chunk's own)")
    g.add_argument("--follow-up-share", type=_share, default=0.0, metavar="SHARE",
                   help="the share of items that are follow-ups (0 to 1, default 0): a question that only makes sense "
                        "after the first question it keeps as its history, to measure the rewrite of follow-ups")
    g.add_argument("--avoid-rare", action="store_true",
                   help="offline: questions without each chunk's rarest words (its highest-idf terms), asked with its "
                        "heading's words: a set that rewards keyword search less (bench/README.md, tune_agreement)")
    g.add_argument("--generator", choices=GENERATORS, default="offline",
                   help="model: a chat model writes the questions (eval.generator-model, else the chat model); "
                        "offline (default): questions by templates from the documents' own words, no key")
    where = g.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", metavar="FILE.jsonl", help="write the set here (its description beside it)")
    where.add_argument("--name", metavar="NAME", help="save as a named set (under <data-dir>/eval/testsets/, or in "
                                                      "database.url's database), usable by name in `eval`, "
                                                      "`eval answers` and the page")
    g.add_argument("--json", action="store_true", help="print how the set was made as JSON")
    g.add_argument("--quiet", action="store_true", help="no progress bar")
    g.set_defaults(func=cmd_generate)

    a = argparse.ArgumentParser(prog=f"{prog} answers", formatter_class=fmt, description=__doc__)
    a.add_argument("test_set", metavar="SET", help="a saved set's name, a .jsonl/.csv file, or sample")
    a.add_argument("--kb", dest="target_kb", metavar="NAME",
                   help="the knowledge base the agent answers from (default: the one --kb before `eval` chooses, "
                        "else the default)")
    a.add_argument("--sample", type=_positive, metavar="N", help="a seeded random sample of N items")
    a.add_argument("--seed", type=int, help="seed of --sample (default 0)")
    a.add_argument("--offline", action="store_true", help="the extractive offline agent, no model")
    a.add_argument("--out", help="folder for run.json / summary.csv / queries.csv (default: the saved runs, "
                                 "<data-dir>/eval/answers/<time>-<set>, or the shared database with database.url)")
    a.add_argument("--no-save", action="store_true", help="print only; write no files")
    a.add_argument("--json", action="store_true", help="print the whole run as JSON")
    a.add_argument("--quiet", action="store_true", help="no progress bar")
    a.set_defaults(func=cmd_answers)
    return {"generate": g, "answers": a}

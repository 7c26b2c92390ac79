"""`python -m rag_core eval tune`: a knowledge base's search settings tuned on its own test set, applied or reverted.

    python -m rag_core eval tune biz --set reviewed-40                 # sweep, choose on half, check on the other
    python -m rag_core eval tune biz --set reviewed-40 --apply         # ... and keep the winner if it is a real gain
    python -m rag_core eval tune biz --set reviewed-40 --retrieve-k 10,30 --max-chunks-per-document 1,2
    python -m rag_core eval tune --revert biz                          # put back what the last --apply replaced

The sweep covers fusion, dense weight, retrieve-k and the per-document cap (their values below, each with the
knowledge base's own). The set's queries are split in two seeded halves: the winner is the best point on one by
nDCG@10, and its gain over the current settings is measured on the other, with a paired bootstrap 95% interval.
--apply keeps a winner only when that interval lies above 0 (--force: also within noise), recording where the
values came from (`kb show` prints it). A generated set (offline or model questions) tunes only the parameters
measured to agree with real labels (rag_core/evaluation/tune_agreement.json; without it, none).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..config import KEYS, Settings
from ..errors import EvaluationError
from ..evaluation.params import LABELS, PARAM_SETTINGS
from .audit import record
from .output import format_table, print_json, stage_progress_bar


def cmd_tune(args: argparse.Namespace, settings: Settings) -> int:
    from ..bootstrap import build_rewriter, build_test_sets, factories, knowledge_bases
    from ..evaluation.kbs import check_known
    from ..evaluation.testsets import load_set
    from ..evaluation.tune import PARAMS, allowed_params, apply_tuning, generators_of, revert_tuning, tune
    from .testsets import open_test_set

    if args.revert:
        if args.target_kb or args.test_set or args.apply:
            raise EvaluationError("eval tune --revert KB takes only the knowledge base.")
        with knowledge_bases(settings) as kbs:
            kb, back, notes = revert_tuning(kbs, args.revert)
        record(settings, "kbs.set", kb.name, kb.name, {**back, "reverted": "tuning"})
        if args.json:
            print_json({"name": kb.name, "settings": dict(kb.settings), "reverted": back, "notes": notes})
        else:
            print(f"reverted the tuning of {kb.name}: "
                  + (", ".join(f"{k} = {v!r}" for k, v in back.items()) or "nothing to put back"))
            for note in notes:
                print(f"note: {note}")
        return 0
    if not args.target_kb or not args.test_set:
        raise EvaluationError("eval tune: give the knowledge base and --set NAME (or --revert KB).")
    with knowledge_bases(settings) as kbs:
        check_known(kbs, [args.target_kb])  # an unknown knowledge base is named before the set is read
    test_set = open_test_set(settings, args.test_set)
    allowed = allowed_params(test_set.name, generators_of(test_set.items))
    values = {p: getattr(args, p) for p in PARAMS if getattr(args, p) is not None}
    sets = build_test_sets(settings)
    try:
        eval_set = load_set(args.test_set, live=True, saved=sets)
    finally:
        sets.close()
    if args.force and not args.apply:
        raise EvaluationError("eval tune: --force goes with --apply.")
    with knowledge_bases(settings) as kbs:
        check_known(kbs, [args.target_kb])
        wb = kbs.open(args.target_kb)
        try:
            with stage_progress_bar(not args.quiet) as progress:
                result = tune(eval_set, wb, settings, factories(), allowed, values=values, seed=args.seed,
                              rewriter=build_rewriter(settings), progress=progress)
        finally:
            wb.close()
        found = result.to_dict()
        if args.json:  # the result with whether it was applied; a refusal is the error line alone
            applied = apply_tuning(kbs, found, force=args.force) if args.apply else None
            print_json({**found, "applied": applied is not None}, indent=1)
        else:  # the result first, so a refused --apply still shows what was measured
            print_result(result)
            applied = apply_tuning(kbs, found, force=args.force) if args.apply else None
    if applied is not None:
        record(settings, "kbs.set", applied.name, applied.name, {**found["changes"], "tuned_on": found["set"]})
        if not args.json:
            print(f"applied to {applied.name}: {', '.join(f'{k} = {v!r}' for k, v in found['changes'].items())} "
                  f"(`python -m rag_core eval tune --revert {applied.name}` puts back the previous values)")
    elif found["changes"] and found["real"] and not args.json:
        print(f"apply it: `python -m rag_core eval tune {found['kb']} --set {found['set']} --apply`")
    return 0


def print_result(result: Any) -> None:
    """The sweep, the current and winning values, both halves' nDCG@10, and the verdict line."""
    found = result.to_dict()
    print(f"{found['set']} on {found['kb']}: {len(found['tuning_queries'])} tuning + {len(found['held_out_queries'])} "
          f"held-out queries (seed {found['seed']}), {found['points']} points over "
          f"{', '.join(LABELS[p] for p in result.params)}")
    if result.refused:
        print(f"note: {result.refused}")
    rows = [{"setting": k, "current": found["current"][k], "winner": found["winner"][k]} for k in found["current"]]
    print(format_table(rows, ["setting", "current", "winner"], {}))
    print(f"nDCG@10 tuning half: current {found['tuning']['current']:.3f}, winner {found['tuning']['winner']:.3f}; "
          f"held-out half: current {found['held_out']['current']:.3f}, winner {found['held_out']['winner']:.3f}")
    print(result.summary())
    for warning in found["warnings"][:10]:
        print(f"warning: {warning}", file=sys.stderr)


def _values(name: str) -> Any:
    """An argparse type for a comma-separated list of `name`'s values (the parser `eval` and the page use)."""
    from ..evaluation.params import choices_of, parse_values

    kind = {int: int, float: float}.get(KEYS[PARAM_SETTINGS[name]].type, str)

    def parse(text: str) -> list[Any]:
        try:
            return parse_values(text, kind, LABELS[name], choices_of(name) or None)
        except EvaluationError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def build_parser(prog: str) -> argparse.ArgumentParser:
    """The parser of `eval tune` (the `eval` parser hands its arguments over: evaluation.EvalParser)."""
    from ..evaluation.tune import DEFAULT_VALUES, PARAMS, RESAMPLES, SEED

    p = argparse.ArgumentParser(prog=f"{prog} tune", formatter_class=argparse.RawDescriptionHelpFormatter,
                                description=__doc__)
    p.add_argument("target_kb", nargs="?", metavar="KB", help="the knowledge base to tune")
    p.add_argument("--set", dest="test_set", metavar="NAME",
                   help="its test set: a saved set's name, a .jsonl/.csv file, or sample")
    for name in PARAMS:
        p.add_argument("--" + name.replace("_", "-"), dest=name, type=_values(name), metavar="V[,V...]",
                       help=f"{LABELS[name]} values to sweep besides the knowledge base's own (default "
                            f"{','.join(map(str, DEFAULT_VALUES[name]))})")
    p.add_argument("--seed", type=int, default=SEED, help=f"seed of the split and the bootstrap (default {SEED})")
    p.add_argument("--apply", action="store_true", help="write the winner into the knowledge base's settings when "
                                                        "its held-out gain is a real gain (interval above 0)")
    p.add_argument("--force", action="store_true", help="with --apply: also a winner whose gain is within noise")
    p.add_argument("--revert", metavar="KB", help="put back the values the last applied tuning of KB replaced")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_tune, resamples=RESAMPLES)
    return p

"""Tune: a knowledge base's search settings chosen on its own test set, and kept only when the choice holds on
queries it was not chosen on.

A sweep over fusion, dense weight, retrieve-k and the per-document cap (`PARAMS`; every other setting stays the
knowledge base's) runs once on every query of the set (`runner.run_evaluation` on the knowledge base as it is).
The queries are then split in two seeded halves (`split_queries`): the best point on the *tuning* half by nDCG@10
is the winner (`choose`; its own settings win a tie, then the point changing fewest settings), and on the
*held-out* half the paired difference winner − current settings per query gets a paired bootstrap 95% interval of
its mean (`paired_bootstrap`, seeded). Picking the best of many points on one half always finds a gain there;
the held-out half is where a lucky point shows as noise. The gain is "a real gain" when the interval lies above
0, else "within noise" (`verdict`).

Tuning is only as good as the set it runs on. Questions generated from the knowledge base's own chunks
(generator `offline` or `model`) reward matching the chunk's words, so a generated set may change only the
parameters a measurement found to agree with real labels (`agreeing`: `tune_agreement.json` next to this module,
written by bench/tune_agreement.py, which tunes on generated and on real labels of the same public corpora and
keeps a parameter when its orderings agree on every corpus; published in bench/README.md). Without that file, or
when it lists nothing, a generated set tunes nothing, and says why. A set of hand-labelled questions (generator
"": written by hand, or 👎 turns made test items) tunes them all.

BM25's k1 and b are not tuned: Milvus builds them into the collection's sparse index (`bm25_k1`, `bm25_b` of
SPARSE_INVERTED_INDEX, store/milvus/schema.py: none given, so 1.2 and 0.75), so each value would rebuild the live
knowledge base's index (released, dropped, built, loaded: its searches fail meanwhile), not a lookup option.

Applying (`apply_tuning`) writes the winner into the knowledge base's settings with where it came from (the set,
the gain and its interval, when: kb.settings.origin_of) and the values it replaced; `revert_tuning` puts those
back. A winner within noise is applied only when forced.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Settings
from ..errors import EvaluationError, KnowledgeBaseError
from ..records import KnowledgeBase
from .params import LABELS, PARAM_SETTINGS

PARAMS = ("fusion", "dense_weight", "retrieve_k", "max_chunks_per_document")
# The values swept besides the knowledge base's own (always in the grid: it is what the winner is compared with).
DEFAULT_VALUES: dict[str, tuple[Any, ...]] = {"fusion": ("rrf", "weighted", "dbsf"), "dense_weight": (0.3, 0.5, 0.7),
                                              "retrieve_k": (10, 20, 40), "max_chunks_per_document": (1, 2, 3)}
METRIC = "ndcg@10"
SEED = 0
RESAMPLES = 2000
MIN_QUERIES = 4  # two per half at least; fewer cannot say anything
FEW_HELD_OUT = 10  # below this the interval is wide: said with the result
AGREEMENT = Path(__file__).with_name("tune_agreement.json")
GENERATED = ("model", "offline")  # TestItem.generator values of generated items ("" is written by hand)
REAL_GAIN, WITHIN_NOISE = "real gain", "within noise"
MEASURED = "bench/README.md, Tuning on generated sets vs real labels"  # where the agreement is published


# ---------------------------------------------------------------------------------------- the statistics
def split_queries(ids: Iterable[str], seed: int = SEED) -> tuple[list[str], list[str]]:
    """The query ids in two seeded halves (tuning, held-out): sorted first, so the split depends on the ids and the
    seed only, not on the set's order; the tuning half gets the odd one."""
    ordered = sorted(set(ids))
    shuffled = [ordered[i] for i in np.random.default_rng(seed).permutation(len(ordered))]
    half = math.ceil(len(shuffled) / 2)
    return sorted(shuffled[:half]), sorted(shuffled[half:])


def mean_over(scores: Mapping[str, float], ids: Sequence[str]) -> float:
    """The mean of `scores` (query id -> value) over `ids` (0 for a query without a value)."""
    return float(np.mean([scores.get(q, 0.0) for q in ids])) if ids else 0.0


def choose(scores: Sequence[Mapping[str, float]], ids: Sequence[str], current: int,
           changes: Sequence[int]) -> int:
    """The index of the best point by its mean over `ids`; a tie goes to the `current` point, then to the point
    with the fewest `changes` (settings it changes), then to the first."""
    def rank(i: int) -> tuple[float, int, int, int]:
        return (round(mean_over(scores[i], ids), 9), i == current, -changes[i], -i)

    return max(range(len(scores)), key=rank)


@dataclass(frozen=True)
class Interval:
    """The mean of the paired differences and its bootstrap interval."""

    mean: float
    low: float
    high: float
    level: float = 0.95


def paired_bootstrap(differences: Sequence[float], seed: int = SEED, resamples: int = RESAMPLES,
                     level: float = 0.95) -> Interval:
    """A percentile bootstrap interval of the mean of paired `differences` (winner − current, one per query):
    `resamples` resamples of the queries with replacement, seeded, so the same inputs give the same interval."""
    d = np.asarray(differences, dtype=float)
    if d.size == 0:
        raise EvaluationError("No held-out query to compare the winner with the current settings on.")
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, d.size, size=(resamples, d.size))].mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return Interval(float(d.mean()), float(low), float(high), level)


def verdict(interval: Interval) -> str:
    """"real gain" when the whole interval lies above 0, else "within noise"."""
    return REAL_GAIN if interval.low > 0 else WITHIN_NOISE


# ---------------------------------------------------------------------------------------- what a set may tune
def generators_of(items: Iterable[Any]) -> list[str]:
    """The generators of a test set's active items that made them (offline, model); [] for a hand-labelled set."""
    return sorted({i.generator for i in items if i.active and i.generator in GENERATED})


def agreeing(generators: Sequence[str], path: Path | None = None) -> tuple[str, ...] | None:
    """The parameters a measurement found to choose as real labels do when tuned on sets of these generators (each
    generator's list in `path`, {"generators": {"offline": {"agreeing": [...]}, ...}}; for several, those all
    agree on; default AGREEMENT); None when nothing was measured (no file, or a generator it does not cover)."""
    path = path or AGREEMENT
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise EvaluationError(f"{path} is damaged ({exc}); delete it, or run its benchmark again.") from None
    lists = []
    for generator in generators:
        entry = (data.get("generators") or {}).get(generator)
        if not isinstance(entry, Mapping) or not isinstance(entry.get("agreeing"), list):
            return None
        lists.append(set(entry["agreeing"]))
    return tuple(p for p in PARAMS if all(p in agreed for agreed in lists))


@dataclass(frozen=True)
class Allowed:
    """The parameters a set may tune, and (when fewer than all) why, in one line."""

    params: tuple[str, ...]
    generators: tuple[str, ...]
    why: str = ""


def allowed_params(set_name: str, generators: Sequence[str], path: Path | None = None) -> Allowed:
    """Every parameter for a hand-labelled set; for a generated one those `agreeing` lists (none without it)."""
    path = path or AGREEMENT
    if not generators:
        return Allowed(PARAMS, ())
    agreed = agreeing(generators, path)
    made = "/".join(generators)
    if agreed is None:
        return Allowed((), tuple(generators), (
            f"test set {set_name!r} was generated ({made}), and no measurement says which settings tuned on generated "
            f"questions choose as real labels do ({path.name}, written by bench/tune_agreement.py, not run here): "
            "generated questions reward matching the chunk's own words, so it tunes nothing; tune on a hand-labelled "
            "set."))
    if not agreed:
        return Allowed((), tuple(generators), (
            f"test set {set_name!r} was generated ({made}): measured against real labels ({MEASURED}), no setting "
            "tuned on such questions chose as real labels did, so it tunes nothing; tune on a hand-labelled set."))
    left = [p for p in PARAMS if p not in agreed]
    why = (f"test set {set_name!r} was generated ({made}): it tunes only "
           f"{', '.join(LABELS[p] for p in agreed)}, the settings measured to choose as real labels do ({MEASURED}), "
           f"not {', '.join(LABELS[p] for p in left)}" if left else "")
    return Allowed(agreed, tuple(generators), why)


# ---------------------------------------------------------------------------------------- the run
@dataclass(frozen=True)
class TuneResult:
    """What `tune` found: the winner against the knowledge base's own settings, on the held-out half."""

    kb: str
    set_name: str
    generators: tuple[str, ...]
    params: tuple[str, ...]  # the parameters swept
    refused: str  # why some (or all) parameters were not swept ("" when none was held back)
    current: dict[str, Any]  # setting -> the knowledge base's value, for the swept parameters
    winner: dict[str, Any]  # setting -> the winner's value (== current when it is the current point)
    points: int
    tuning_ids: tuple[str, ...]
    held_out_ids: tuple[str, ...]
    tuning: dict[str, float]  # "current", "winner": mean nDCG@10 on the tuning half
    held_out: dict[str, float]  # the same on the held-out half
    interval: Interval
    seed: int
    resamples: int
    at: str
    skipped: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    per_query: tuple[dict[str, Any], ...] = field(default_factory=tuple)  # held-out: query, current, winner

    @property
    def changes(self) -> dict[str, Any]:
        """The settings the winner changes (setting -> new value)."""
        return {k: v for k, v in self.winner.items() if v != self.current.get(k)}

    @property
    def verdict(self) -> str:
        return verdict(self.interval) if self.changes else "current settings best"

    @property
    def real(self) -> bool:
        return bool(self.changes) and self.verdict == REAL_GAIN

    def summary(self) -> str:
        """One line: the winner, its held-out gain with the interval, and the verdict."""
        if not self.changes:
            return (f"{self.kb}: its own settings are the best of {self.points} points on the tuning half of "
                    f"{self.set_name} ({METRIC} {self.tuning['current']:.3f}): nothing to apply")
        i = self.interval
        changed = ", ".join(f"{k} {self.current.get(k)!r} -> {v!r}" for k, v in self.changes.items())
        return (f"{self.kb}: winner {changed}: {METRIC} {i.mean:+.3f} on the held-out half ({len(self.held_out_ids)} "
                f"queries; 95% interval {i.low:+.3f} to {i.high:+.3f}): {self.verdict}")

    def to_dict(self) -> dict[str, Any]:
        return {"kb": self.kb, "set": self.set_name, "generators": list(self.generators), "params": list(self.params),
                "refused": self.refused, "current": self.current, "winner": self.winner, "changes": self.changes,
                "points": self.points, "metric": METRIC, "tuning_queries": list(self.tuning_ids),
                "held_out_queries": list(self.held_out_ids), "tuning": self.tuning, "held_out": self.held_out,
                "gain": round(self.interval.mean, 6), "interval": [round(self.interval.low, 6),
                                                                   round(self.interval.high, 6)],
                "level": self.interval.level, "verdict": self.verdict, "real": self.real, "seed": self.seed,
                "resamples": self.resamples, "at": self.at, "skipped": list(self.skipped),
                "warnings": list(self.warnings), "per_query": list(self.per_query), "summary": self.summary()}


def grid_values(current: Mapping[str, Any], params: Sequence[str],
                values: Mapping[str, Sequence[Any]] | None = None) -> dict[str, tuple[Any, ...]]:
    """Each swept parameter's values: the knowledge base's own first (so it is a point of the grid), then
    `values` (default DEFAULT_VALUES), each once."""
    chosen = {**DEFAULT_VALUES, **(values or {})}
    return {p: tuple(dict.fromkeys([current[p], *chosen[p]])) for p in params}


def tune(eval_set: Any, workbench: Any, settings: Settings, factories: Any, allowed: Allowed, *,
         values: Mapping[str, Sequence[Any]] | None = None, seed: int = SEED, resamples: int = RESAMPLES,
         rewriter: Any = None,
         progress: Callable[[Any], None] | None = None, now: Callable[[], datetime] = lambda: datetime.now(UTC),
         ) -> TuneResult:
    """Sweep `allowed.params` on knowledge base `workbench` (open) over `eval_set`'s queries, choose on the tuning
    half, check on the held-out half. `values`: the values to sweep per parameter (default DEFAULT_VALUES); a
    parameter the set may not tune is refused with `allowed.why`. `rewriter`: the rewrite stage's (follow-ups)."""
    from .runner import Grid, run_evaluation

    if values and (refused := [p for p in values if p not in allowed.params]):
        raise EvaluationError(f"{', '.join(LABELS.get(p, p) for p in refused)}: "
                              + (allowed.why or f"not a parameter tune sweeps ({', '.join(PARAMS)})"))
    if not allowed.params:
        raise EvaluationError(allowed.why)
    ids = [q.query_id for q in eval_set.queries]
    if len(ids) < MIN_QUERIES:
        raise EvaluationError(f"Test set {eval_set.name!r} has {len(ids)} queries to search: tuning needs at least "
                              f"{MIN_QUERIES} (two halves of two).")
    params = allowed.params
    kb_settings = workbench.settings
    base = Grid.from_settings(kb_settings)
    current = {p: getattr(base, p)[0] for p in params}
    grid = Grid.from_settings(kb_settings, **grid_values(current, params, values))
    run = run_evaluation(eval_set, grid, settings, factories=factories, progress=progress,
                         knowledge_bases=[workbench], rewriter=rewriter)
    points = [r.point for r in run.points]
    scores = [{q["query_id"]: float(q.get(METRIC) or 0.0) for q in r.queries} for r in run.points]
    at_current = [all(getattr(p, k) == current[k] for k in params if p.relevant(k)) for p in points]
    if not any(at_current):
        raise EvaluationError("The knowledge base's own settings are not a valid point of the sweep "
                              f"({'; '.join(run.skipped) or 'skipped'}).")
    current_index = at_current.index(True)
    shown = [{PARAM_SETTINGS[k]: (getattr(p, k) if p.relevant(k) else current[k]) for k in params} for p in points]
    mine = shown[current_index]
    changes = [sum(v != mine[k] for k, v in s.items()) for s in shown]
    tuning_ids, held_out_ids = split_queries(ids, seed)
    winner_index = choose(scores, tuning_ids, current_index, changes)
    win, cur = scores[winner_index], scores[current_index]
    differences = [win.get(q, 0.0) - cur.get(q, 0.0) for q in held_out_ids]
    interval = paired_bootstrap(differences, seed, resamples)
    texts = {q.query_id: q.text for q in eval_set.queries}
    warnings = list(run.warnings)
    if len(held_out_ids) < FEW_HELD_OUT:
        warnings.append(f"only {len(held_out_ids)} held-out queries: the interval is wide; a larger set says more")
    return TuneResult(
        kb=workbench.settings.kb_name, set_name=eval_set.name, generators=allowed.generators, params=params,
        refused=allowed.why, current=mine, winner=shown[winner_index], points=len(points),
        tuning_ids=tuple(tuning_ids), held_out_ids=tuple(held_out_ids),
        tuning={"current": round(mean_over(cur, tuning_ids), 6), "winner": round(mean_over(win, tuning_ids), 6)},
        held_out={"current": round(mean_over(cur, held_out_ids), 6),
                  "winner": round(mean_over(win, held_out_ids), 6)},
        interval=interval, seed=seed, resamples=resamples, at=now().isoformat(timespec="seconds"),
        skipped=tuple(run.skipped), warnings=tuple(warnings),
        per_query=tuple({"query_id": q, "query": texts.get(q, ""), "current": cur.get(q, 0.0),
                         "winner": win.get(q, 0.0), "difference": round(d, 6)}
                        for q, d in zip(held_out_ids, differences)))


# ---------------------------------------------------------------------------------------- apply and revert
def applied_provenance(result: Mapping[str, Any], forced: bool) -> Callable[[KnowledgeBase, Mapping[str, Any]],
                                                                             dict[str, Any]]:
    """How a knowledge base's provenance changes when `result` (TuneResult.to_dict) is applied: each changed
    setting recorded as tuned on the set, with the gain and interval; the tuning record keeps the values and
    origins it replaced, for `revert_tuning`."""
    from ..kb.settings import recorded

    def change(kb: KnowledgeBase, values: Mapping[str, Any]) -> dict[str, Any]:
        low, high = result["interval"]
        origins = {key: {"kind": "tuned", "value": values[key], "at": result["at"], "set": result["set"],
                         "gain": result["gain"], "low": low, "high": high} for key in result["changes"]}
        before = (kb.provenance.get("origins") or {})
        tuning = {"set": result["set"], "at": result["at"], "applied_at": datetime.now(UTC).isoformat(
            timespec="seconds"), "gain": result["gain"], "interval": result["interval"], "verdict": result["verdict"],
            "forced": forced, "metric": result.get("metric", METRIC), "held_out": len(result["held_out_queries"]),
            "values": dict(result["changes"]),
            "previous": {key: kb.settings.get(key) for key in result["changes"]},
            "previous_origins": {key: before.get(key) for key in result["changes"]}}
        return {**recorded(kb.provenance, origins), "tuning": tuning}

    return change


def apply_tuning(kbs: Any, result: Mapping[str, Any], *, force: bool = False) -> KnowledgeBase:
    """Write `result`'s winner (TuneResult.to_dict) into its knowledge base's settings (`kbs`: kb.manage's
    KnowledgeBases). Refused for a winner within noise unless `force`, and when there is nothing to change."""
    if not result["changes"]:
        raise KnowledgeBaseError(f"Nothing to apply to {result['kb']!r}: its own settings were the best on "
                                 f"{result['set']!r}.", "refused")
    if not result["real"] and not force:
        low, high = result["interval"]
        raise KnowledgeBaseError(f"Not applied: the winner's gain on the held-out half of {result['set']!r} is within "
                                 f"noise ({result['gain']:+.3f}, 95% interval {low:+.3f} to {high:+.3f}); apply it "
                                 "anyway with --force (the page: Apply anyway).", "refused")
    return kbs.update(result["kb"], result["changes"], provenance=applied_provenance(result, force))


def revert_tuning(kbs: Any, name: str) -> tuple[KnowledgeBase, dict[str, Any], list[str]]:
    """Put back the values the last applied tuning of knowledge base `name` replaced, with their origins; a setting
    changed since (by hand) keeps its value, and is named in the notes. Returns the entry, the values put back and
    the notes."""
    from ..kb.settings import recorded

    kb = kbs.get(name)
    tuning = kb.provenance.get("tuning")
    if not tuning:
        raise KnowledgeBaseError(f"Knowledge base {name!r} has no applied tuning to revert (`kb show {name}` says "
                                 "where each setting came from).", "refused")
    previous, values = dict(tuning.get("previous") or {}), dict(tuning.get("values") or {})
    back = {k: v for k, v in previous.items() if kb.settings.get(k) == values.get(k)}
    notes = [f"{k} was changed since it was tuned ({values.get(k)!r} -> {kb.settings.get(k)!r}): kept"
             for k in previous if k not in back]

    def change(entry: KnowledgeBase, _: Mapping[str, Any]) -> dict[str, Any]:
        origins = {k: (tuning.get("previous_origins") or {}).get(k) for k in back}
        return {k: v for k, v in recorded(entry.provenance, origins).items() if k != "tuning"}

    return kbs.update(name, back, provenance=change), back, notes  # nothing to put back: the record still goes

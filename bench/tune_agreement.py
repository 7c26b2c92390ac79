"""Does a generated test set tune a knowledge base as real labels would? (issue 41)

`eval tune KB --set NAME` (rag_core/evaluation/tune.py) sweeps fusion, dense weight, retrieve-k and the cap per
document and keeps the best point by nDCG@10. On a generated set it may change only the parameters listed for
its generator in rag_core/evaluation/tune_agreement.json, which this benchmark writes.

For SciFact, CMRC 2018 and COVID-QA (a seeded sample of QUERIES real queries; the corpus slice is their relevant
documents plus CORPUS_SAMPLE others, as in bench/testsets.py), SIZE items are generated from the same corpus
(chunked as the settings say, 800/100) by the offline generator in each style (STYLES: "default" as `eval generate`
makes them, "avoid-rare" with `--avoid-rare`: without each chunk's highest-idf terms), and tune's own grid
(`tune.grid_values` at the settings' defaults: fusion weighted / rrf / dbsf, dense weight 0.5 / 0.3 / 0.7,
retrieve-k 20 / 10 / 40, cap 2 / 1 / 3; 81 points, hybrid, local USE embedder, Milvus Lite) runs under the real
labels and under each generated set's (`run_evaluation`; the index is shared by the runs).

Per parameter, its slice of the grid (its values, every other parameter at the default) is ordered by nDCG@10
under each set of labels and the two orderings compared:
* Kendall's tau-b (`bench.testsets.kendall_tau`; None when one set of labels scores every point the same);
* the winner: the generated labels' best point (a tie goes to the default, as `tune.choose` does) and its regret,
  the real best's nDCG@10 minus the generated winner's real nDCG@10.
The whole grid ("all four", what Tune chooses among) and the search mode (bm25 / dense / hybrid at the defaults:
not tuned, shown because the issue is about generated sets preferring keyword search) are compared the same way.

The rule: a parameter AGREES for a style when, on every set, tau >= TAU_MIN and the regret <= REGRET_MAX. An
undefined tau fails it: a set that scores every value the same cannot rank them, so it has not been shown to agree
(a generated set, one relevant document per item, often cannot see the cap per document).
rag_core/evaluation/tune_agreement.json lists, for generator "offline", the parameters that agree for every style
(a set's items say "offline" whatever their style, so Tune cannot tell them apart), each style's own list beside
it; generator "model" is not measured here (bench/testsets.py's model generator is a stub), so a model-generated set
tunes nothing. A `--quick` run writes bench/results/quick/ only and leaves tune_agreement.json alone.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from bench.common import REPO, RESULTS, log, main, record_and_print, section, table
from bench.testsets import SETS, kendall_tau, sampled_set
from rag_core.bootstrap import factories
from rag_core.config import load_settings
from rag_core.embedding.local import LocalUSEEmbedder
from rag_core.evaluation import Grid, load_user_set, run_evaluation
from rag_core.evaluation.generate import generate_offline
from rag_core.evaluation.params import LABELS
from rag_core.evaluation.tune import AGREEMENT, PARAMS, grid_values

QUERIES, CORPUS_SAMPLE, SIZE = 50, 50, 50
QUICK = (8, 8, 8)
STYLES = {"default": False, "avoid-rare": True}  # style -> generate_offline's avoid_rare
MODES = ("hybrid", "dense", "bm25")
METRIC = "ndcg@10"
TAU_MIN, REGRET_MAX = 0.5, 0.01
JOINT, MODE = "all", "mode"  # the whole grid; the search mode (not tuned)


def _key(point: Any) -> tuple[Any, ...]:
    return tuple(getattr(point, p) for p in PARAMS)


def _scores(run: Any) -> dict[tuple[Any, ...], float]:
    return {_key(p.point): float(p.metrics[METRIC]) for p in run.points}


def slices(keys: list[tuple[Any, ...]], current: tuple[Any, ...]) -> dict[str, list[tuple[Any, ...]]]:
    """Each parameter's points (its values, the others at `current`), in grid order; JOINT: every point."""
    out = {p: [k for k in keys if all(k[j] == current[j] for j in range(len(PARAMS)) if j != i)]
           for i, p in enumerate(PARAMS)}
    return {**out, JOINT: list(keys)}


def compare(real: dict[Any, float], generated: dict[Any, float], points: list[Any], current: Any) -> dict[str, Any]:
    """Tau, both winners and the regret of the generated winner, over `points` (a tie goes to `current`, then to
    the first in grid order)."""
    def best(scores: dict[Any, float]) -> Any:
        return max(points, key=lambda k: (round(scores[k], 9), k == current, -points.index(k)))

    tau = kendall_tau([real[k] for k in points], [generated[k] for k in points])
    winner_real, winner_gen = best(real), best(generated)
    regret = real[winner_real] - real[winner_gen]
    return {"points": len(points), "tau": tau, "winner_real": list(winner_real) if isinstance(winner_real, tuple)
            else winner_real, "winner_generated": list(winner_gen) if isinstance(winner_gen, tuple) else winner_gen,
            "real_best": round(real[winner_real], 6), "generated_winner_real": round(real[winner_gen], 6),
            "regret": round(regret, 6), "same_winner": winner_real == winner_gen,
            "agrees": tau is not None and tau >= TAU_MIN and regret <= REGRET_MAX}


def measure(quick: bool = False) -> dict[str, Any]:
    n_queries, corpus_sample, size = QUICK if quick else (QUERIES, CORPUS_SAMPLE, SIZE)
    settings = load_settings(data_dir=RESULTS / ("quick" if quick else "") / "data", env={}, config_file=None)
    embedder = LocalUSEEmbedder()
    base = Grid.from_settings(settings)
    current = {p: getattr(base, p)[0] for p in PARAMS}
    values = grid_values(current, PARAMS)
    grid = Grid.from_settings(settings, mode=["hybrid"], **values)
    modes = Grid.from_settings(settings, mode=list(MODES))
    here = tuple(current[p] for p in PARAMS)
    payload: dict[str, Any] = {"queries": n_queries, "corpus_sample": corpus_sample, "size": size, "metric": METRIC,
                               "current": current, "values": {p: list(v) for p, v in values.items()},
                               "tau_min": TAU_MIN, "regret_max": REGRET_MAX, "sets": {}, "comparisons": []}
    for name, split in SETS:
        started = time.perf_counter()
        real, store = sampled_set("tune_agreement", name, split, n_queries, corpus_sample, settings)
        docs = real.documents or ()
        labels: dict[str, Any] = {"real": real}
        entry: dict[str, Any] = {"split": split, "documents": len(docs), "real_queries": len(real.queries),
                                 "styles": {}}
        for style, avoid_rare in STYLES.items():
            result = generate_offline(store, size=size, seed=0, kb_name=name, avoid_rare=avoid_rare)
            path = RESULTS / ("quick" if quick else "") / "data" / f"tune_agreement-{name}-{style}.jsonl"
            result.write(path)
            labels[style] = load_user_set(path, corpus=docs)
            entry["styles"][style] = {"items": len(result.items), "rejected": dict(result.rejected),
                                      "kinds": {k: sum(1 for i in result.items if i.kind == k)
                                                for k in sorted({i.kind for i in result.items})},
                                      "examples": [i.query for i in result.items[:3]]}
        scores: dict[str, dict[Any, float]] = {}
        by_mode: dict[str, dict[Any, float]] = {}
        for label, eval_set in labels.items():
            run = run_evaluation(eval_set, grid, settings, factories=factories(), embedder=embedder)
            scores[label] = _scores(run)
            by_mode[label] = {p.point.mode: float(p.metrics[METRIC])
                              for p in run_evaluation(eval_set, modes, settings, factories=factories(),
                                                      embedder=embedder).points}
            log(f"  {label}: {len(run.points)} points, best {max(scores[label].values()):.3f}")
        keys = list(scores["real"])
        entry["real"] = {"default": scores["real"][here], "best": max(scores["real"].values()),
                         "modes": by_mode["real"]}
        for style in STYLES:
            compared: dict[str, list[Any]] = {**slices(keys, here), MODE: list(MODES)}
            for param, points in compared.items():
                real_s, gen_s = (by_mode["real"], by_mode[style]) if param == MODE else (scores["real"], scores[style])
                c = compare(real_s, gen_s, points, "hybrid" if param == MODE else here)
                payload["comparisons"].append({"set": name, "style": style, "param": param, **c})
                log(f"  {style} {param}: tau {c['tau']}, regret {c['regret']:.3f}, agrees {c['agrees']}")
        entry["seconds"] = round(time.perf_counter() - started, 1)
        payload["sets"][name] = entry
    payload["agreeing"] = agreeing_params(payload["comparisons"])
    return payload


def agreeing_params(comparisons: list[dict[str, Any]]) -> dict[str, list[str]]:
    """style -> the tuned parameters (PARAMS order) that agree on every set."""
    out = {}
    for style in STYLES:
        rows = [c for c in comparisons if c["style"] == style]
        out[style] = [p for p in PARAMS if all(c["agrees"] for c in rows if c["param"] == p)
                      and any(c["param"] == p for c in rows)]
    return out


def agreement(record: dict[str, Any]) -> dict[str, Any]:
    """What rag_core/evaluation/tune_agreement.json holds for a record, in the form tune.agreeing reads: for
    "offline", the parameters that agree for every style (Tune cannot tell a set's style from its items)."""
    agreeing = record["agreeing"]
    both = [p for p in PARAMS if all(p in agreed for agreed in agreeing.values())]
    return {"written_by": "python -m bench.tune_agreement", "measured": record["timestamp"],
            "see": "bench/README.md (Tuning on generated sets vs real labels)",
            "rule": f"tau >= {record['tau_min']} and regret <= {record['regret_max']} ({record['metric']}) on every "
                    f"set: {', '.join(record['sets'])}",
            "generators": {"offline": {"agreeing": both, "styles": agreeing}}}


def write_agreement(record: dict[str, Any], path: Path = AGREEMENT) -> None:
    path.write_text(json.dumps(agreement(record), indent=1) + "\n", encoding="utf-8")


def _tau(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.2f}"


def render(record: dict[str, Any]) -> str:
    names = list(record["sets"])
    rows = []
    for style in STYLES:
        for param in (*PARAMS, JOINT, MODE):
            found = {c["set"]: c for c in record["comparisons"] if c["style"] == style and c["param"] == param}
            cells = [f"{_tau(found[n]['tau'])} / {found[n]['regret']:.3f}{'' if found[n]['agrees'] else ' ✗'}"
                     if n in found else "–" for n in names]
            label = {JOINT: "all four (the whole grid)", MODE: "search mode (not tuned)"}.get(param) or LABELS[param]
            verdict = ("agrees" if param in record["agreeing"].get(style, []) else "no") if param in PARAMS else "–"
            rows.append([style, label, *cells, verdict])
    md = table(["offline style", "parameter", *(f"{n}: tau / regret" for n in names), "tunable"], rows, digits=2)
    sizes = "; ".join(f"{n}: {s['real_queries']} real queries, {s['documents']} documents, generated "
                      + ", ".join(f"{st} {v['items']}" for st, v in s["styles"].items()) for n, s in
                      record["sets"].items())
    both = [p for p in PARAMS if all(p in a for a in record["agreeing"].values())]
    ceiling = "; ".join(f"{n} {s['real']['default']:.3f} / {s['real']['best']:.3f}" for n, s in record["sets"].items())
    defaults = ", ".join(f"{LABELS[p]} {v!r}" for p, v in record["current"].items())
    md += (f"\n\nPer parameter: its values with the others at the defaults ({defaults}), "
           f"ordered by {record['metric']} under the real labels and under a generated set's; regret = the real "
           f"best's {record['metric']} minus the generated winner's real {record['metric']}; ✗ = tau below "
           f"{record['tau_min']} (or undefined) or regret above {record['regret_max']}. A parameter is tunable on a "
           f"generated set when it agrees on every set ({sizes}). Real {record['metric']} at the defaults / "
           f"the grid's best: {ceiling}; where the real labels score every value of a parameter the same, its tau "
           "is undefined and it cannot be shown to agree there. "
           f"So an offline set may tune: {', '.join(LABELS[p] for p in both) or 'nothing'} "
           "(rag_core/evaluation/tune_agreement.json).")
    return section("Tuning on generated sets vs real labels", md, record)


def run(quick: bool = False) -> str:
    text = record_and_print("tune_agreement", quick, measure(quick), render)
    if not quick:
        from bench.common import load

        write_agreement(load("tune_agreement") or {})
        log(f"wrote {AGREEMENT.relative_to(REPO)}")
    return text


if __name__ == "__main__":
    main(run, __doc__)

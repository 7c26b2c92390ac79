"""The expansion measured best (`rag.expand`), which a knowledge base created without `rag.expand` set anywhere gets
(rag_core.kb.settings.with_measured_expand).

`expand_measured.json` next to this module is written by `python -m bench.expand` (its record:
bench/results/expand.json): answer-in-context of `none` / `neighbours` (N = 1, 2) / `parent` at equal total token
budgets (rag.context-tokens), on CMRC 2018, COVID-QA and the sample knowledge base. The chosen expansion is the one
whose smallest gain in answer-in-context over `none` on the long-document sets, at `REFERENCE_TOKENS`, is the
largest; it is `applied` only when that gain is at least `GOAL_POINTS` and it loses no more than `MARGIN_POINTS` on
any set at that budget. Otherwise the default stays `none`, and the file says why.

The benchmark measures the default chunking and small chunks (which small to big is for): the choice is made per
chunking (`by_chunking`), and a new knowledge base takes the one measured at the chunk size nearest its own
(`measured(chunk_size=...)`); the top-level choice is the default chunking's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

DATA = Path(__file__).with_name("expand_measured.json")
REFERENCE_TOKENS = 2000  # the total token budget the choice is made at (rag.context-tokens)
GOAL_POINTS = 5.0  # answer-in-context points an expansion must add on every long-document set (issue 36)
MARGIN_POINTS = 1.0  # what it may lose on any other set: less is within what a few hundred queries tell apart


def mode_name(mode: str, neighbours: int | None) -> str:
    """"neighbours 2" for neighbours, else the mode."""
    return f"{mode} {neighbours}" if mode == "neighbours" else mode


def gains(sets: Sequence[Mapping[str, Any]], mode: str, neighbours: int | None,
          tokens: int = REFERENCE_TOKENS) -> list[float]:
    """Answer-in-context points the expansion adds over `none` at `tokens`, per set (a bench/expand.py record's
    `sets`)."""
    out = []
    for s in sets:
        rows = {(r["expand"], r["neighbours"], r["context_tokens"]): r for r in s["rows"]}
        base = rows[("none", None, tokens)]["answer_in_context"]
        out.append(round((rows[(mode, neighbours, tokens)]["answer_in_context"] - base) * 100, 6))  # 95 - 90: 5
    return out


def choice(sets: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The expansion chosen from a bench/expand.py record's `sets`, whether it is applied, and why."""
    long_sets = [s for s in sets if s["long"]] or list(sets)
    candidates = list(dict.fromkeys((r["expand"], r["neighbours"]) for s in sets for r in s["rows"]
                                    if r["expand"] != "none"))
    ranked = [(min(gains(long_sets, *c)), sum(gains(long_sets, *c)), c) for c in candidates]
    smallest, _, (mode, neighbours) = max(ranked, key=lambda r: (r[0], r[1]))  # max keeps the first of equals
    everywhere = gains(sets, mode, neighbours)
    per_set = {s["label"]: round(g, 2) for s, g in zip(sets, everywhere)}
    long_labels = ", ".join(s["label"] for s in long_sets)
    name = mode_name(mode, neighbours)
    if smallest < GOAL_POINTS:
        applied, why = False, (f"no expansion raised answer-in-context by {GOAL_POINTS:g} points at {REFERENCE_TOKENS} "
                               f"tokens on every long-document set ({long_labels}); the best, {name}, by "
                               f"{smallest:+.1f}")
    elif min(everywhere) < -MARGIN_POINTS:
        applied, why = False, (f"{name} raises answer-in-context by {smallest:+.1f} points on the long-document sets "
                               f"but loses {min(everywhere):.1f} on another")
    else:
        applied, why = True, (f"{name} raises answer-in-context by {smallest:+.1f} points at {REFERENCE_TOKENS} tokens "
                              f"(the least over {long_labels}) and loses no more than {MARGIN_POINTS:g} on any set")
    return {"rag.expand": mode if applied else "none", "rag.expand-neighbours": neighbours if applied else None,
            "best": {"expand": mode, "neighbours": neighbours, "gain_points": round(smallest, 2),
                     "gain_points_per_set": per_set},
            "applied": applied, "why": why}


def at_default_chunking(sets: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The sets of a bench/expand.py record measured at the default chunking (it also measures small chunks), which
    the default for new knowledge bases is chosen on."""
    return [s for s in sets if s.get("default_chunking", True)]


def write_defaults(record: Mapping[str, Any], path: Path = DATA) -> dict[str, Any]:
    """expand_measured.json from a bench/expand.py record (its sets at the default chunking)."""
    sets = at_default_chunking(record["sets"])
    chunkings = list(dict.fromkeys(tuple(s["chunking"]) for s in record["sets"] if s.get("chunking")))
    data = {"source": "python -m bench.expand (record: bench/results/expand.json)",
            "timestamp": record["timestamp"], "machine": record["machine"], "context_tokens": REFERENCE_TOKENS,
            "goal_points": GOAL_POINTS, "sets": [s["label"] for s in sets],
            "long_sets": [s["label"] for s in sets if s["long"]], **choice(sets),
            "by_chunking": [{"chunking": list(c), **choice([s for s in record["sets"] if tuple(s["chunking"]) == c])}
                            for c in chunkings]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    load.cache_clear()
    return data


@dataclass(frozen=True)
class MeasuredExpand:
    values: Mapping[str, Any]  # rag.expand (and rag.expand-neighbours for neighbours)
    note: str  # where they come from, for the knowledge base's note


@lru_cache(maxsize=1)
def load(path: Path = DATA) -> dict[str, Any] | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def measured(data: Mapping[str, Any] | None = None, chunk_size: int | None = None) -> MeasuredExpand | None:
    """The expansion bench/expand.py measured best (`none` when none met the goal, saying so), at the measured
    chunking nearest `chunk_size` (None: the default chunking's); None for an install without the file."""
    data = data if data is not None else load()
    if not data:
        return None
    date = str(data.get("timestamp", "?"))[:10]
    at = ""
    if chunk_size and data.get("by_chunking"):
        nearest = min(data["by_chunking"], key=lambda c: abs(math.log(chunk_size / c["chunking"][0])))
        if nearest["rag.expand"] != data["rag.expand"] or nearest["chunking"][0] != chunk_size:
            at = f" for chunks of {nearest['chunking'][0]} characters (the measured size nearest {chunk_size})"
        data = {**data, **nearest}
    best = data["best"]
    mode = data["rag.expand"]
    values: dict[str, Any] = {"rag.expand": mode}
    if mode == "neighbours":
        values["rag.expand-neighbours"] = data["rag.expand-neighbours"]
    if data["applied"]:
        note = (f"rag.expand = {mode!r} measured by bench/expand.py on {date}{at}: answer-in-context "
                f"{best['gain_points']:+.1f} points at {data['context_tokens']} tokens"
                + (f" (rag.expand-neighbours = {values['rag.expand-neighbours']})" if mode == "neighbours" else ""))
    else:
        note = f"rag.expand = 'none' measured by bench/expand.py on {date}{at}: {data['why']}"
    return MeasuredExpand(values, note)

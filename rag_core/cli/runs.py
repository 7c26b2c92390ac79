"""Saving a run the CLI made (`eval`, `eval answers`) and saying where: the saved runs of
`bootstrap.build_eval_runs` (folders under the data folder, or the shared database), or the folder --out names."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ..config import Settings
from ..errors import StoreError
from ..records import SavedRun


def save_eval_run(settings: Settings, run: Any, out: str | None) -> SavedRun:
    """Saves a run (an EvalRun or AnswerRun): into the folder `out` when given (its files only, as always), else into
    the saved runs (`bootstrap.build_eval_runs`: folders under the data folder, or the shared database)."""
    from ..bootstrap import build_eval_runs
    from ..evaluation.answers import answers_dir
    from ..evaluation.results import new_run_dir, runs_dir, save_run

    if out:
        return SavedRun(Path(out).name, str(Path(out)), save_run(run, out))
    try:
        store = build_eval_runs(settings)
        try:
            return store.save(run.to_dict())
        finally:
            store.close()
    except StoreError as error:  # a run can take an hour: keep it in the data folder rather than lose it
        root = answers_dir(settings) if run.to_dict().get("kind") == "answers" else runs_dir(settings)
        folder = new_run_dir(root, run.set_name)
        print(f"warning: {error}; the run is saved in {folder} instead.", file=sys.stderr)
        return SavedRun(folder.name, str(folder), save_run(run, folder))


def saved_fields(saved: SavedRun | None) -> dict[str, Any]:
    """A saved run in --json output: its id (what RUN names it by) and its files (none in a database)."""
    if saved is None:
        return {"files": {}}
    return {"run_id": saved.id, "files": {k: str(v) for k, v in saved.files.items()}}


def saved_line(saved: SavedRun) -> str:
    if saved.files:
        return f"saved {Path(saved.files['json']).parent}/ (run.json, summary.csv, queries.csv)"
    return f"saved run {saved.id} in {saved.where}"

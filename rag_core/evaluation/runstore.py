"""Saved evaluation runs (ports.EvalRunStore): in folders by default, in the shared database with database.url.

A run is one JSON document (`EvalRun.to_dict`, `AnswerRun.to_dict`: an answer run's has `kind` "answers") named
by an id, `<UTC time>-<set>`. `FolderRunStore` keeps each in its own folder, as the workbench always has:
`<data-dir>/eval/runs/<id>/` (answer runs under `eval/answers/`) holding run.json, summary.csv and queries.csv.
`SqlRunStore` keeps each as one row of `eval_runs` (rag_core/db: revision 0004_eval_runs), the document as JSON
text (its keys in their order, its numbers as written), so several API workers and the app on other machines see
the same runs; the CSV files are derived from the document (`results.run_files`) when a run is exported or
downloaded. Either store also opens a run by the path of its folder or run.json (a run saved elsewhere with
`--out`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc
from sqlalchemy.engine import Engine

from ..db.engine import reaching, where, writing
from ..db.migrate import upgrade
from ..db.tables import eval_runs
from ..errors import EvaluationError, StoreError
from ..records import RUN_KINDS, EvalRunInfo, RunKind, SavedRun
from .results import read_run_json, run_id, write_run

WHAT = {"retrieval": "run", "answers": "answer run"}
SAVE_ATTEMPTS = 3  # two processes saving a run of one set in the same second: the later takes the next id


def kind_of(run: Mapping[str, Any]) -> RunKind:
    return "answers" if run.get("kind") == "answers" else "retrieval"


def checked(run: Any, kind: RunKind, name: object) -> dict[str, Any]:
    """`run` when it is a saved run of `kind`; one clear line naming `name` when not."""
    if kind not in RUN_KINDS:
        raise EvaluationError(f"{kind!r} is not a kind of run: use one of {', '.join(RUN_KINDS)}.")
    if kind == "answers" and not (isinstance(run, dict) and run.get("kind") == "answers"):
        raise EvaluationError(f"{name} is not a saved answer run (a retrieval run is read with load_run).")
    if kind == "retrieval" and not (isinstance(run, dict) and "points" in run and kind_of(run) == "retrieval"):
        raise EvaluationError(f"{name} is not a saved run.")
    return run


def kb_of(run: Mapping[str, Any]) -> str:
    """The knowledge bases a run ran on, comma-separated: a retrieval run's indexes, an answer run's set's."""
    names = [str(idx["kb"]) for idx in run.get("index") or [] if isinstance(idx, Mapping) and idx.get("kb")]
    if not names:
        meta = (run.get("set_info") or {}).get("meta") or {}
        names = [str(meta["kb"])] if isinstance(meta, Mapping) and meta.get("kb") else []
    return ",".join(dict.fromkeys(names))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _from_path(name: str | Path, kind: RunKind) -> dict[str, Any]:
    path, data = read_run_json(name, WHAT[kind])
    return checked(data, kind, path)


# ------------------------------------------------------------------------------------------ in folders
class FolderRunStore:
    """Runs in folders: `retrieval` holds retrieval runs (`results.runs_dir`), `answers` answer runs
    (`answers.answers_dir`), one folder per run named by its id."""

    def __init__(self, retrieval: Path, answers: Path) -> None:
        self.roots: dict[RunKind, Path] = {"retrieval": Path(retrieval), "answers": Path(answers)}

    @property
    def where(self) -> str:
        return str(self.roots["retrieval"])

    def __repr__(self) -> str:
        return f"FolderRunStore({self.where!r})"

    def save(self, run: Mapping[str, Any]) -> SavedRun:
        root = self.roots[kind_of(run)]
        folder = root / run_id(str(run.get("set") or ""), lambda name: (root / name).exists())
        return SavedRun(folder.name, str(folder), write_run(run, folder))

    def runs(self, kind: RunKind = "retrieval") -> list[EvalRunInfo]:
        root = self.roots[kind]
        if not root.is_dir():
            return []
        folders = sorted((p for p in root.iterdir() if (p / "run.json").is_file()), key=lambda p: p.name, reverse=True)
        return [info for p in folders if (info := _folder_info(p, kind)) is not None]

    def load(self, name: str | Path, kind: RunKind = "retrieval") -> dict[str, Any]:
        own = self.roots[kind] / str(name)
        if _is_id(name) and not own.is_dir() and not Path(name).exists():
            raise EvaluationError(f"No saved {WHAT[kind]} {str(name)!r} in {self.roots[kind]}.")
        return _from_path(own if _is_id(name) and own.is_dir() else name, kind)

    def export(self, name: str | Path, out_dir: str | Path, kind: RunKind = "retrieval") -> dict[str, Path]:
        return write_run(self.load(name, kind), out_dir)

    def close(self) -> None:
        pass


def _is_id(name: str | Path) -> bool:
    text = str(name)
    return bool(text) and "/" not in text and "\\" not in text and text not in (".", "..")


_INFO: dict[tuple[str, int, int], EvalRunInfo | None] = {}  # (run.json, mtime, size) -> its listing (read once)


def _folder_info(folder: Path, kind: RunKind) -> EvalRunInfo | None:
    """A folder's listing from its run.json (read once per version of the file: lists are drawn on every rerun of
    the app's page, and a sweep's run.json can be megabytes); None for one that is not a run of `kind`."""
    path = folder / "run.json"
    try:
        stat = path.stat()
    except OSError:
        return None
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if key not in _INFO:
        try:
            run = checked(json.loads(path.read_text(encoding="utf-8")), kind, path)
        except (OSError, ValueError, EvaluationError):
            _INFO[key] = None
        else:
            saved = datetime.fromtimestamp(stat.st_mtime, UTC).isoformat(timespec="microseconds")
            _INFO[key] = EvalRunInfo(folder.name, kind, str(run.get("set") or ""), kb_of(run), saved)
    return _INFO[key]


# ------------------------------------------------------------------------------------------ in SQL
class SqlRunStore:
    """Runs as rows of `eval_runs` on the shared database (PostgreSQL by database.url; SQLite in tests), its schema
    brought to the newest revision on first use."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._ready = False

    @property
    def where(self) -> str:
        return where(self._engine)

    def __repr__(self) -> str:
        return f"SqlRunStore({self.where!r})"

    def _opened(self) -> Engine:
        if not self._ready:
            upgrade(self._engine)
            self._ready = True
        return self._engine

    def save(self, run: Mapping[str, Any]) -> SavedRun:
        """One insert in one transaction: the run is there whole, or not at all."""
        kind, set_name = kind_of(run), str(run.get("set") or "")
        document, eng = json.dumps(run, ensure_ascii=False, separators=(",", ":")), self._opened()
        for _ in range(SAVE_ATTEMPTS):
            try:
                with reaching(eng), writing(eng) as conn:
                    def taken(name: str) -> bool:
                        return conn.scalar(sa.select(eval_runs.c.id).where(eval_runs.c.id == name)) is not None

                    name = run_id(set_name, taken)
                    conn.execute(sa.insert(eval_runs).values(id=name, kind=kind, set_name=set_name, kb=kb_of(run),
                                                             created_at=_now(), run=document))
                return SavedRun(name, f"{self.where} (eval_runs)")
            except exc.IntegrityError:  # another process took that id between our read and our insert
                continue
        raise StoreError(f"Cannot save the run in {self.where}: its id was taken {SAVE_ATTEMPTS} times over by "
                         "runs saved at the same moment; save it again.")

    def runs(self, kind: RunKind = "retrieval") -> list[EvalRunInfo]:
        c = eval_runs.c
        query = (sa.select(c.id, c.kind, c.set_name, c.kb, c.created_at).where(c.kind == kind)
                 .order_by(c.created_at.desc(), c.id.desc()))
        eng = self._opened()
        with reaching(eng), eng.connect() as conn:
            return [EvalRunInfo(r.id, r.kind, r.set_name, r.kb, r.created_at) for r in conn.execute(query)]

    def load(self, name: str | Path, kind: RunKind = "retrieval") -> dict[str, Any]:
        eng = self._opened()
        with reaching(eng), eng.connect() as conn:
            document = conn.scalar(sa.select(eval_runs.c.run).where(eval_runs.c.id == str(name)))
        if document is not None:
            return checked(json.loads(document), kind, f"{WHAT[kind].capitalize()} {str(name)!r}")
        if not Path(name).exists():
            raise EvaluationError(f"No saved {WHAT[kind]} {str(name)!r} in {self.where} (nor a folder of that name).")
        return _from_path(name, kind)

    def export(self, name: str | Path, out_dir: str | Path, kind: RunKind = "retrieval") -> dict[str, Path]:
        return write_run(self.load(name, kind), out_dir)

    def close(self) -> None:
        self._engine.dispose()

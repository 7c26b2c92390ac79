"""The EvalRunStore contract on every adapter: folders under the data folder (the default), the SQL store on an
SQLite file and on a real PostgreSQL (tests/postgres.py); and what each keeps beyond the contract."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag_core.bootstrap import build_eval_runs
from rag_core.config import load_settings
from rag_core.db.engine import engine
from rag_core.evaluation.results import run_files, runs_dir
from rag_core.evaluation.runstore import FolderRunStore, SqlRunStore
from tests.contracts.eval_runs import EvalRunStoreContract, answer_run, retrieval_run


class TestFolderRunStore(EvalRunStoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> FolderRunStore:
        return FolderRunStore(tmp_path / "data" / "eval" / "runs", tmp_path / "data" / "eval" / "answers")


class TestSqliteRunStore(EvalRunStoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[SqlRunStore]:
        opened = SqlRunStore(engine(f"sqlite:///{tmp_path / 'team.db'}"))
        yield opened
        opened.close()


class TestPostgresRunStore(EvalRunStoreContract):
    @pytest.fixture
    def store(self, postgres_db: str) -> Iterator[SqlRunStore]:
        opened = SqlRunStore(engine(postgres_db))
        yield opened
        opened.close()


def test_without_a_database_url_runs_are_the_folders_they_always_were(tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path, env={})
    store = build_eval_runs(settings, env={})
    assert isinstance(store, FolderRunStore) and store.where == str(runs_dir(settings))
    run, answers = retrieval_run(), answer_run()
    saved, scored = store.save(run), store.save(answers)
    folder = tmp_path / "eval" / "runs" / saved.id
    assert saved.where == str(folder) and {k: p.name for k, p in saved.files.items()} == \
        {"json": "run.json", "summary": "summary.csv", "queries": "queries.csv"}
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == run_files(run)
    assert (tmp_path / "eval" / "answers" / scored.id / "run.json").is_file()
    assert store.load(folder) == run  # by its folder, as before
    assert not (tmp_path / "team.db").exists()


def test_with_a_database_url_runs_are_rows_every_process_sees(tmp_path: Path, postgres_db: str) -> None:
    here = build_eval_runs(load_settings(data_dir=tmp_path, env={"RAG_DATABASE_URL": postgres_db}))
    there = build_eval_runs(load_settings(data_dir=tmp_path / "other", env={}), env={"RAG_DATABASE_URL": postgres_db})
    assert isinstance(here, SqlRunStore) and here.where.startswith("postgresql+psycopg://***@127.0.0.1:")
    saved = here.save(retrieval_run())
    assert saved.files == {} and [r.id for r in there.runs()] == [saved.id]
    assert there.load(saved.id) == retrieval_run()
    assert not (tmp_path / "eval").exists()  # no folder written
    here.close()
    there.close()


def test_the_cli_names_a_run_in_the_database_by_its_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """compare-runs and export-run with database.url: the ids `eval` printed name the runs, as folders did."""
    from rag_core.cli import main

    url = f"sqlite:///{tmp_path / 'shared.db'}"
    store = SqlRunStore(engine(url))
    a, b = store.save(retrieval_run()), store.save(retrieval_run(kb="ops"))
    store.close()
    before = ["--data-dir", str(tmp_path / "data"), "--set", f"database.url={url}"]
    assert main([*before, "compare-runs", f"{a.id}#1", f"{b.id}#2", "--json"]) == 0
    compared = json.loads(capsys.readouterr().out)
    assert (compared["A_params"]["mode"], compared["B_params"]["mode"]) == ("dense", "hybrid")
    assert main([*before, "export-run", b.id, str(tmp_path / "out")]) == 0
    assert capsys.readouterr().out == f"wrote {tmp_path / 'out'}/ (run.json, summary.csv, queries.csv)\n"
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == run_files(retrieval_run(kb="ops"))
    assert main([*before, "export-run", "20261204T000000Z-nope", str(tmp_path / "none")]) == 2
    assert "No saved run '20261204T000000Z-nope'" in capsys.readouterr().err
    assert not (tmp_path / "data" / "eval").exists()


class _Run:
    set_name = "运维-set"

    def to_dict(self) -> dict:
        return retrieval_run()


def test_a_run_the_database_cannot_keep_is_kept_in_the_data_folder(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing lost: with the database down, the CLI saves the run where it always did, and says so."""
    from rag_core.cli.runs import save_eval_run

    settings = load_settings(data_dir=tmp_path, env={},
                             overrides={"database.url": "postgresql://ann:secret@127.0.0.1:1/team"})
    saved = save_eval_run(settings, _Run(), None)
    assert saved.files["json"] == tmp_path / "eval" / "runs" / saved.id / "run.json"
    assert json.loads(saved.files["json"].read_text(encoding="utf-8")) == retrieval_run()
    err = capsys.readouterr().err
    assert err.startswith("warning: Cannot use the database postgresql+psycopg://***@127.0.0.1:1/team: ")
    assert err.endswith(f"; the run is saved in {tmp_path / 'eval' / 'runs' / saved.id} instead.\n")
    assert "secret" not in err

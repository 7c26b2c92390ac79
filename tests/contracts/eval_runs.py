"""The EvalRunStore contract (rag_core.ports.EvalRunStore), checked on every adapter: the folders under the data
folder and the SQL store on SQLite and on a real PostgreSQL (tests/evaluation/test_eval_runs_contract.py).

A test module subclasses `EvalRunStoreContract` and provides `store` (an open store holding no run).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from rag_core.errors import EvaluationError
from rag_core.evaluation.results import load_point, run_files, write_run
from rag_core.ports import EvalRunStore


def retrieval_run(set_name: str = "运维-set", kb: str = "docs") -> dict[str, Any]:
    """A retrieval run's document as `EvalRun.to_dict` makes it: two points of two queries; keys in no sorted order."""
    def point(mode: str, ndcg: float) -> dict[str, Any]:
        queries = [{"query_id": f"q{n}", "query": f"磁盘满了 {n}?", "ndcg@10": ndcg / n, "relevant": ["a.md", "b.md"],
                    "failed": n == 2, "first_relevant_rank": None if n == 2 else 1} for n in (1, 2)]
        return {"params": {"kb": kb, "mode": mode, "fusion": None, "return_n": 5},
                "metrics": {"queries": 2, "ndcg@10": ndcg, "recall@5": 0.5}, "queries": queries}

    return {"set": set_name, "set_info": {"queries": {"rule": "first", "of": 2}}, "config": {"varying": ["mode"],
            "embedder": "local"}, "versions": {"python": "3.12"}, "started_at": "2026-12-04T10:00:00.000001+00:00",
            "seconds": 1.25, "index": [{"kb": kb, "documents": 2, "chunks": 7}], "skipped": [], "warnings": ["w"],
            "machine": {}, "points": [point("dense", 0.5), point("hybrid", 0.75)]}


def answer_run(set_name: str = "biz-50") -> dict[str, Any]:
    """An answer run's document as `AnswerRun.to_dict` makes it."""
    items = [{"id": f"g{n}", "query": f"q{n}", "answer": "a", "f1": 0.5, "judge": {"raw": "x"}, "evidence": ["e"]}
             for n in (1, 2, 3)]
    return {"kind": "answers", "set": set_name, "set_info": {"items": 3, "meta": {"kb": "biz"}},
            "config": {"agent": "offline"}, "started_at": "2026-12-04T10:00:00+00:00", "seconds": 2.0,
            "summary": {"items": 3, "f1": 0.5, "faithfulness": None}, "warnings": [], "items": items}


def csv_rows(content: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(content.decode("utf-8"), newline="")))


class EvalRunStoreContract:
    @pytest.fixture
    def store(self) -> EvalRunStore:
        raise NotImplementedError("a test module provides the adapter under test")

    def test_is_an_eval_run_store(self, store: EvalRunStore) -> None:
        assert isinstance(store, EvalRunStore)
        assert store.where and "password" not in store.where

    def test_empty(self, store: EvalRunStore) -> None:
        assert store.runs() == [] and store.runs("answers") == []
        with pytest.raises(EvaluationError, match="No saved run"):
            store.load("20261204T100000Z-nothing")

    def test_a_saved_run_is_read_back_exactly(self, store: EvalRunStore) -> None:
        run = retrieval_run()
        saved = store.save(run)
        again = store.load(saved.id)
        assert again == run
        assert json.dumps(again, ensure_ascii=False) == json.dumps(run, ensure_ascii=False)  # keys in their order
        assert saved.where and "password" not in saved.where

    def test_runs_are_listed_newest_first_with_what_lists_show(self, store: EvalRunStore) -> None:
        ids = [store.save(retrieval_run()).id for _ in range(3)]
        other = store.save(retrieval_run("other set", kb="ops")).id
        assert len(set(ids + [other])) == 4
        assert all("-_-set" in i for i in ids)  # <UTC time>-<set>, the set's name made safe for a folder
        listed = store.runs()
        assert len(listed) == 4 and [r.id for r in listed if r.id != other] == ids[::-1]
        first = next(r for r in listed if r.id == ids[0])
        assert (first.kind, first.set_name, first.kb) == ("retrieval", "运维-set", "docs")
        assert first.created_at.endswith("+00:00")
        assert next(r for r in listed if r.id == other).kb == "ops"
        assert store.runs("answers") == []

    def test_answer_runs_are_kept_apart(self, store: EvalRunStore) -> None:
        run, retrieval = answer_run(), store.save(retrieval_run())
        saved = store.save(run)
        assert store.load(saved.id, "answers") == run
        [listed] = store.runs("answers")
        assert (listed.id, listed.kind, listed.set_name, listed.kb) == (saved.id, "answers", "biz-50", "biz")
        assert [r.id for r in store.runs()] == [retrieval.id]
        with pytest.raises(EvaluationError, match="is not a saved run|No saved run"):  # folders: another folder
            store.load(saved.id)
        with pytest.raises(EvaluationError, match="is not a saved answer run|No saved answer run"):
            store.load(retrieval.id, "answers")

    def test_export_writes_the_files_derived_from_the_document(self, store: EvalRunStore, tmp_path: Path) -> None:
        run = retrieval_run()
        paths = store.export(store.save(run).id, tmp_path / "exported")
        assert sorted(p.name for p in paths.values()) == ["queries.csv", "run.json", "summary.csv"]
        files = run_files(run)
        assert {p.name: p.read_bytes() for p in paths.values()} == files
        summary, queries = csv_rows(files["summary.csv"]), csv_rows(files["queries.csv"])
        assert [(r["mode"], r["ndcg@10"], r["fusion"]) for r in summary] == \
            [("dense", "0.5", ""), ("hybrid", "0.75", "")]
        assert [(r["point"], r["query_id"], r["relevant"]) for r in queries] == \
            [("0", "q1", "a.md;b.md"), ("0", "q2", "a.md;b.md"), ("1", "q1", "a.md;b.md"), ("1", "q2", "a.md;b.md")]
        answers = store.export(store.save(answer_run()).id, tmp_path / "answers", "answers")
        rows = csv_rows(answers["queries"].read_bytes())
        assert [r["id"] for r in rows] == ["g1", "g2", "g3"] and "judge" not in rows[0] and "evidence" not in rows[0]

    def test_a_run_saved_elsewhere_opens_by_its_path(self, store: EvalRunStore, tmp_path: Path) -> None:
        run = retrieval_run("elsewhere")
        paths = write_run(run, tmp_path / "out")  # `eval --out DIR`
        assert store.load(tmp_path / "out") == run and store.load(str(paths["json"])) == run
        assert store.runs() == []  # not one of the saved runs
        with pytest.raises(EvaluationError, match="No saved run"):
            store.load(tmp_path / "nope")

    def test_a_run_and_a_row_are_named_by_its_id(self, store: EvalRunStore) -> None:
        saved = store.save(retrieval_run())
        assert load_point(f"{saved.id}#1", store.load)[1] == 0
        assert load_point(saved.id, store.load)[1] == 1  # its best row by nDCG@10
        with pytest.raises(EvaluationError, match="#3 is not a row of that run"):
            load_point(f"{saved.id}#3", store.load)

"""`eval tune` through the CLI, in-process, on a real knowledge base (a copy of biz from `two_kbs`: examples/kb,
Milvus Lite, the local embedder): a hand-labelled saved set of 20 is swept, split, checked on its held-out half;
`--apply` changes the settings and origins `kb show --json` prints, `--revert` puts them back; a generated set is
refused the parameters no measurement lists. The run is deterministic (exact search, a seeded split and
bootstrap), so its verdict is pinned."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_core.evaluation import tune as tune_module
from tests.evaluation.conftest import TUNABLE as KB
from tests.helpers import run_cli


@pytest.fixture(scope="module")
def data(tunable) -> Path:
    return tunable


def show(data: Path, capsys) -> dict:
    code, out, err = run_cli(data, capsys, "kb", "show", KB, "--json")
    assert code == 0, err
    return json.loads(out)


def test_tune_apply_and_revert_on_a_hand_labelled_set(data: Path, capsys) -> None:
    before = show(data, capsys)
    assert before["settings"]["rag.dense-weight"] == 0.0 and before["origins"]["rag.dense-weight"]["kind"] == "hand"
    sweep = ("--fusion", "weighted", "--dense-weight", "0.7", "--retrieve-k", "20", "--max-chunks-per-document", "2")
    code, out, err = run_cli(data, capsys, "eval", "tune", KB, "--set", "hand20", *sweep, "--quiet", "--json")
    assert code == 0, err
    found = json.loads(out)
    assert (found["points"], len(found["tuning_queries"]), len(found["held_out_queries"])) == (2, 10, 10)
    assert found["params"] == list(tune_module.PARAMS) and found["refused"] == ""
    assert found["current"]["rag.dense-weight"] == 0.0 and found["changes"] == {"rag.dense-weight": 0.7}
    low, high = found["interval"]
    assert low <= found["gain"] <= high and found["tuning"]["winner"] > found["tuning"]["current"]
    assert not set(found["tuning_queries"]) & set(found["held_out_queries"])
    assert [q["query_id"] for q in found["per_query"]] == found["held_out_queries"]
    # deterministic: dense 0.7 is better on both halves, but 10 held-out queries do not rule out noise
    assert (found["verdict"], found["real"]) == ("within noise", False)

    code, out, err = run_cli(data, capsys, "eval", "tune", KB, "--set", "hand20", *sweep, "--quiet")
    assert code == 0, err
    assert "held-out half (10 queries; 95% interval" in out and out.rstrip().endswith("within noise")

    # --apply keeps a winner within noise only when forced; the refusal is one line
    code, out, err = run_cli(data, capsys, "eval", "tune", KB, "--set", "hand20", *sweep, "--quiet", "--apply")
    assert code != 0 and "within noise" in err and "--force" in err and len(err.strip().splitlines()) == 1
    assert show(data, capsys)["settings"] == before["settings"]
    code, out, err = run_cli(data, capsys, "eval", "tune", KB, "--set", "hand20", *sweep, "--quiet", "--apply",
                             "--force")
    assert code == 0, err
    assert f"applied to {KB}: rag.dense-weight = 0.7" in out
    after = show(data, capsys)
    assert after["settings"] == {**before["settings"], "rag.dense-weight": 0.7}
    origin = after["origins"]["rag.dense-weight"]
    assert (origin["kind"], origin["set"], origin["gain"]) == ("tuned", "hand20", found["gain"])
    assert origin["text"].startswith("tuned on test set hand20 on ")
    assert after["origins"]["rag.retrieve-k"]["kind"] == before["origins"]["rag.retrieve-k"]["kind"]
    assert after["tuning"]["previous"] == {"rag.dense-weight": 0.0} and after["tuning"]["forced"] is True
    code, out, err = run_cli(data, capsys, "kb", "show", KB)
    assert "rag.dense-weight = 0.7  (tuned on test set hand20 on " in out and "eval tune --revert" in out

    code, out, err = run_cli(data, capsys, "eval", "tune", "--revert", KB)
    assert code == 0, err
    assert out.startswith(f"reverted the tuning of {KB}: rag.dense-weight = 0.0")
    reverted = show(data, capsys)
    assert reverted["settings"] == before["settings"] and reverted["origins"] == before["origins"]
    assert reverted["tuning"] == {}
    code, out, err = run_cli(data, capsys, "eval", "tune", "--revert", KB)
    assert code != 0 and "no applied tuning to revert" in err and len(err.strip().splitlines()) == 1


def test_a_generated_set_tunes_only_what_a_measurement_lists(data: Path, capsys, tmp_path, monkeypatch) -> None:
    code, out, err = run_cli(data, capsys, "eval", "generate", "--kb", KB, "--size", "8", "--seed", "0", "--name",
                             "gen8", "--quiet")
    assert code == 0, err
    monkeypatch.setattr(tune_module, "AGREEMENT", tmp_path / "tune_agreement.json")  # none measured
    code, out, err = run_cli(data, capsys, "eval", "tune", KB, "--set", "gen8", "--quiet")
    assert code != 0 and len(err.strip().splitlines()) == 1
    assert "'gen8' was generated (offline)" in err and "tunes nothing" in err

    (tmp_path / "tune_agreement.json").write_text(json.dumps({"generators": {"offline": {"agreeing": [
        "max_chunks_per_document"]}}}), encoding="utf-8")
    code, out, err = run_cli(data, capsys, "eval", "tune", KB, "--set", "gen8", "--dense-weight", "0.7", "--quiet")
    assert code != 0 and "dense weight: test set 'gen8' was generated (offline)" in err
    assert "not fusion, dense weight, retrieve-k" in err
    code, out, err = run_cli(data, capsys, "eval", "tune", KB, "--set", "gen8", "--max-chunks-per-document", "1",
                             "--quiet", "--json")
    assert code == 0, err
    found = json.loads(out)
    assert found["params"] == ["max_chunks_per_document"] and found["points"] == 2
    assert list(found["current"]) == ["rag.max-chunks-per-document"] and "not fusion" in found["refused"]

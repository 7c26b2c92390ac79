"""The Evaluation page's Tune tab through AppTest, on the real knowledge base `tunable` (a copy of biz, dense weight
0) and the hand-labelled saved set `hand20`: what the set may tune is said, Tune shows the winner with its held-out
gain and interval, Apply anyway (the deterministic verdict is within noise) writes it with its origin, Revert puts the
old value back (the debugger's help says where each default came from); a generated set says in one line that it
tunes nothing and Tune is disabled."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rag_core.bootstrap import knowledge_bases
from rag_core.cli import main
from rag_core.config import load_settings
from rag_core.kb.settings import origin_of
from tests.evaluation.conftest import TUNABLE
from tests.ui.apptest_helpers import app_at
from ui.state import clear_workbench
from ui.tune import RESULT

PAGE = "pages/evaluation.py"


@pytest.fixture
def page(tunable, monkeypatch) -> Iterator[AppTest]:
    monkeypatch.setenv("RAG_DATA_DIR", str(tunable))
    monkeypatch.delenv("RAG_CONFIG", raising=False)
    at = app_at(PAGE)
    at.default_timeout = 120
    yield at
    clear_workbench()


def entry(data: Path):
    with knowledge_bases(load_settings(data_dir=data, env={}, config_file=None), {}) as kbs:
        return kbs.get(TUNABLE)


def test_tune_apply_anyway_and_revert(page: AppTest, tunable: Path) -> None:
    at = page
    at.selectbox(key="eval_tune_kb").set_value(TUNABLE).run()
    at.selectbox(key="eval_tune_set").set_value("hand20").run()
    assert not at.exception, at.exception
    assert any("hand20 is hand-labelled: it tunes fusion, dense weight" in c.value for c in at.caption)
    assert any("Tuning is only as good as the set it runs on" in c.value for c in at.caption)
    for key, value in (("fusion", "weighted"), ("dense_weight", "0.7"), ("retrieve_k", "20"),
                       ("max_chunks_per_document", "2")):
        at.text_input(key=f"eval_tune_{key}").set_value(value)
    at.button(key="eval_tune_run").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    found = at.session_state[RESULT]
    assert found["changes"] == {"rag.dense-weight": 0.7} and found["verdict"] == "within noise"
    assert any("Within noise" in w.value for w in at.warning)
    assert [m.label for m in at.metric][-3:] == ["nDCG@10 held out, current", "nDCG@10 held out, winner",
                                                 "Gain (95% interval)"]
    at.button(key="eval_tune_apply").click().run()  # "Apply anyway"
    assert not at.exception, at.exception
    assert any(f"Applied to {TUNABLE}: rag.dense-weight = 0.7" in s.value for s in at.success)
    kb = entry(tunable)
    assert kb.settings["rag.dense-weight"] == 0.7 and origin_of(kb, "rag.dense-weight").kind == "tuned"
    assert any("keeps the settings tuned on hand20" in c.value for c in at.caption)
    # the debugger says where each default came from, in the control's help
    debugger = app_at("pages/debugger.py", kb=TUNABLE)
    debugger.default_timeout = 120
    helps = {s.key: s.help for s in debugger.slider}
    assert "Where this value came from: Tuned on test set hand20 on " in helps["dense_weight"]
    assert "Where this value came from: The default." in helps["return_n"]
    clear_workbench()

    at.button(key="eval_tune_revert").click().run()
    assert not at.exception, at.exception
    assert any(f"Reverted the tuning of {TUNABLE}." in s.value for s in at.success)
    kb = entry(tunable)
    assert kb.settings["rag.dense-weight"] == 0.0 and "tuning" not in kb.provenance


def test_a_generated_set_says_it_tunes_nothing(page: AppTest, tunable: Path, tmp_path: Path, monkeypatch) -> None:
    import json

    from rag_core.evaluation import tune as tune_module

    monkeypatch.setattr(tune_module, "AGREEMENT", tmp_path / "tune_agreement.json")  # nothing measured
    code = main(
        ["--data-dir", str(tunable), "eval", "generate", "--kb", TUNABLE, "--size", "6", "--seed", "1", "--name",
         "gen6", "--quiet"])
    assert code == 0
    at = page
    at.run()
    at.selectbox(key="eval_tune_kb").set_value(TUNABLE).run()
    at.selectbox(key="eval_tune_set").set_value("gen6").run()
    assert not at.exception, at.exception
    assert any("gen6 was generated (offline)" in i.value and "it tunes nothing" in i.value for i in at.info)
    assert at.button(key="eval_tune_run").disabled
    (tmp_path / "tune_agreement.json").write_text(json.dumps({"generators": {"offline": {"agreeing": []}}}))
    at.run()  # measured, and nothing agreed: says so, and where it was measured
    assert any("measured against real labels" in i.value and "bench/README.md" in i.value
               and "it tunes nothing" in i.value for i in at.info)
    assert at.button(key="eval_tune_run").disabled
    (tmp_path / "tune_agreement.json").write_text(json.dumps({"generators": {"offline": {"agreeing": ["retrieve_k"]}}}))
    at.run()  # measured, and retrieve-k agreed: it tunes that alone
    assert any("it tunes only retrieve-k, the settings measured" in c.value and "bench/README.md" in c.value
               for c in at.caption)
    assert not at.button(key="eval_tune_run").disabled

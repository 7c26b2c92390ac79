"""Tune's statistics and records, without a search: the seeded split, the choice on the tuning half, the paired
bootstrap on the held-out half (a clearly better winner is a real gain, an equal one is within noise), what a
generated set may tune, and apply / revert with where each setting came from (kb.settings.origin_of) on the
in-memory catalog."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_core.bootstrap import knowledge_bases
from rag_core.errors import EvaluationError, KnowledgeBaseError
from rag_core.evaluation.testsets import TestItem
from rag_core.evaluation.tune import (
    PARAMS,
    REAL_GAIN,
    WITHIN_NOISE,
    allowed_params,
    apply_tuning,
    choose,
    generators_of,
    grid_values,
    paired_bootstrap,
    revert_tuning,
    split_queries,
    verdict,
)
from rag_core.kb.catalog import PROVENANCE, settings_json
from rag_core.kb.memory import InMemoryCatalog
from rag_core.kb.settings import origin_of
from rag_core.records import KnowledgeBase
from tests.kb.conftest import settings_for

IDS = [f"q{n:02d}" for n in range(20)]


def test_the_split_is_seeded_disjoint_and_independent_of_order() -> None:
    tuning, held_out = split_queries(IDS, seed=0)
    assert (len(tuning), len(held_out)) == (10, 10) and not set(tuning) & set(held_out)
    assert sorted(tuning + held_out) == IDS
    assert split_queries(list(reversed(IDS)), seed=0) == (tuning, held_out)  # the set's order does not matter
    assert split_queries(IDS, seed=0) == (tuning, held_out)
    assert split_queries(IDS, seed=1) != (tuning, held_out)
    odd = split_queries(IDS[:5], seed=0)
    assert (len(odd[0]), len(odd[1])) == (3, 2)  # the tuning half gets the odd one


def test_a_clearly_better_winner_is_a_real_gain() -> None:
    # point 0: the current settings; point 1: 0.2 better on every query but a little noise; point 2: worse
    current = {q: 0.5 for q in IDS}
    better = {q: 0.7 + (0.05 if i % 3 == 0 else -0.03) for i, q in enumerate(IDS)}
    worse = {q: 0.3 for q in IDS}
    tuning, held_out = split_queries(IDS, seed=0)
    winner = choose([current, better, worse], tuning, current=0, changes=[0, 1, 1])
    assert winner == 1
    interval = paired_bootstrap([better[q] - current[q] for q in held_out], seed=0, resamples=2000)
    assert interval.low > 0.15 and interval.high < 0.25 and interval.low <= interval.mean <= interval.high
    assert verdict(interval) == REAL_GAIN
    # seeded: the same interval every time
    assert paired_bootstrap([better[q] - current[q] for q in held_out], seed=0) == interval


def test_an_equal_winner_or_a_mixed_one_is_within_noise() -> None:
    assert verdict(paired_bootstrap([0.0] * 10)) == WITHIN_NOISE  # the same scores: interval [0, 0]
    mixed = [0.3, -0.3, 0.2, -0.25, 0.1, -0.1, 0.3, -0.2, 0.05, -0.1]
    interval = paired_bootstrap(mixed, seed=0)
    assert interval.low < 0 < interval.high and verdict(interval) == WITHIN_NOISE
    with pytest.raises(EvaluationError, match="No held-out query"):
        paired_bootstrap([])


def test_a_tie_goes_to_the_current_settings_then_to_fewest_changes() -> None:
    same = {q: 0.5 for q in IDS}
    assert choose([same, same, same], IDS, current=1, changes=[2, 0, 1]) == 1
    higher = {q: 0.6 for q in IDS}
    assert choose([same, higher, higher], IDS, current=0, changes=[0, 3, 1]) == 2


def test_grid_values_put_the_knowledge_bases_own_first_once() -> None:
    current = {"fusion": "dbsf", "dense_weight": 0.5, "retrieve_k": 20, "max_chunks_per_document": 2}
    values = grid_values(current, PARAMS, {"retrieve_k": [10, 20, 40]})
    assert values["retrieve_k"] == (20, 10, 40) and values["fusion"] == ("dbsf", "rrf", "weighted")


def item(n: int, generator: str, review: str = "accepted") -> TestItem:
    return TestItem(id=f"i{n}", query=f"question {n}", relevant=("doc.md",), generator=generator, review=review)


def test_a_generated_set_tunes_only_what_a_measurement_says_agrees(tmp_path: Path) -> None:
    real = [item(1, ""), item(2, "")]
    assert generators_of(real) == [] and allowed_params("hand", []).params == PARAMS  # real labels tune all
    generated = [item(1, "offline"), item(2, "model"), item(3, "offline", "dropped")]
    assert generators_of(generated) == ["model", "offline"]
    absent = allowed_params("gen", ["offline"], tmp_path / "tune_agreement.json")
    assert absent.params == () and "was generated (offline)" in absent.why and "tunes nothing" in absent.why
    assert "\n" not in absent.why
    file = tmp_path / "tune_agreement.json"
    file.write_text(json.dumps({"generators": {"offline": {"agreeing": ["retrieve_k", "max_chunks_per_document"]},
                                               "model": {"agreeing": ["retrieve_k", "fusion"]}}}), encoding="utf-8")
    one = allowed_params("gen", ["offline"], file)
    assert one.params == ("retrieve_k", "max_chunks_per_document") and "not fusion, dense weight" in one.why
    assert allowed_params("gen", ["model", "offline"], file).params == ("retrieve_k",)  # what both agree on
    assert allowed_params("gen", ["other"], file).params == ()  # a generator not measured: nothing
    assert "measured to choose as real labels do (bench/README.md" in one.why  # where the measurement is published
    file.write_text(json.dumps({"generators": {"offline": {"agreeing": []}}}), encoding="utf-8")
    none = allowed_params("gen", ["offline"], file)  # measured, and nothing agreed: nothing, and says it was measured
    assert none.params == () and "measured against real labels (bench/README.md" in none.why
    assert "so it tunes nothing" in none.why and "\n" not in none.why


def test_the_shipped_agreement_file_is_one_tune_reads() -> None:
    """rag_core/evaluation/tune_agreement.json, written by bench/tune_agreement.py: a list for offline sets."""
    from rag_core.evaluation.tune import AGREEMENT, agreeing

    assert AGREEMENT.is_file()
    agreed = agreeing(["offline"])
    assert agreed is not None and set(agreed) <= set(PARAMS)
    assert agreeing(["model"]) is None  # not measured: a model-generated set tunes nothing


def result(kb: str = "biz", real: bool = True, changes: dict | None = None) -> dict:
    changes = {"rag.dense-weight": 0.7, "rag.retrieve-k": 30} if changes is None else changes
    return {"kb": kb, "set": "hand20", "changes": changes, "real": real, "gain": 0.12 if real else 0.01,
            "interval": [0.05, 0.2] if real else [-0.02, 0.04], "verdict": REAL_GAIN if real else WITHIN_NOISE,
            "at": "2026-12-04T17:00:00+00:00", "held_out_queries": ["a"] * 10, "metric": "ndcg@10"}


def test_apply_records_where_the_values_came_from_and_revert_puts_the_old_ones_back(tmp_path: Path) -> None:
    with knowledge_bases(settings_for(tmp_path), {}, catalog=InMemoryCatalog()) as kbs:
        kbs.create("ops", {"rag.retrieve-k": 25})
        before = kbs.get("ops")
        assert origin_of(before, "rag.retrieve-k").kind == "hand"  # given when it was made
        assert origin_of(before, "rag.return-n").kind == "default"
        assert origin_of(before, "rag.fusion").kind == "measured"  # the fusion measured for the local embedder

        with pytest.raises(KnowledgeBaseError, match="within noise .*--force"):
            apply_tuning(kbs, result("ops", real=False))
        with pytest.raises(KnowledgeBaseError, match="Nothing to apply"):
            apply_tuning(kbs, result("ops", changes={}))
        tuned = apply_tuning(kbs, result("ops"))
        assert (tuned.settings["rag.dense-weight"], tuned.settings["rag.retrieve-k"]) == (0.7, 30)
        origin = origin_of(tuned, "rag.retrieve-k")
        assert (origin.kind, origin.set, origin.gain, origin.low) == ("tuned", "hand20", 0.12, 0.05)
        assert origin.text() == ("tuned on test set hand20 on 2026-12-04: nDCG@10 +0.120 on the held-out half (95% "
                                 "interval +0.050 to +0.200)")
        record = tuned.provenance["tuning"]
        assert record["previous"] == {"rag.dense-weight": before.settings["rag.dense-weight"], "rag.retrieve-k": 25}
        assert record["set"] == "hand20" and record["forced"] is False

        kbs.update("ops", {"rag.dense-weight": 0.4})  # changed by hand after the tuning
        assert origin_of(kbs.get("ops"), "rag.dense-weight").kind == "hand"
        reverted, back, notes = revert_tuning(kbs, "ops")
        assert back == {"rag.retrieve-k": 25} and reverted.settings["rag.dense-weight"] == 0.4
        assert notes == ["rag.dense-weight was changed since it was tuned (0.7 -> 0.4): kept"]
        assert origin_of(reverted, "rag.retrieve-k").kind == "hand"  # its origin before the tuning, too
        assert "tuning" not in reverted.provenance
        with pytest.raises(KnowledgeBaseError, match="no applied tuning"):
            revert_tuning(kbs, "ops")

        forced = apply_tuning(kbs, result("ops", real=False), force=True)
        assert forced.provenance["tuning"]["forced"] is True


def test_the_catalog_keeps_provenance_beside_the_settings() -> None:
    kb = KnowledgeBase("biz", {"rag.retrieve-k": 30}, provenance={"origins": {"rag.retrieve-k": {"kind": "hand"}}})
    assert settings_json(kb) == {"rag.retrieve-k": 30, PROVENANCE: {"origins": {"rag.retrieve-k": {"kind": "hand"}}}}
    assert settings_json(KnowledgeBase("biz", {"rag.retrieve-k": 30})) == {"rag.retrieve-k": 30}

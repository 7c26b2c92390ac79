"""bench/dictionary.py end to end on the sample knowledge base (its 36 questions), so the benchmark cannot rot: the
knowledge base ingested and evaluated, the suggested dictionary applied by the real BM25 re-index, evaluated again,
and the record's shape (counts, never durations)."""

from __future__ import annotations

import pytest

from bench import dictionary


def test_the_paired_comparison_and_the_goal():
    before, after = {"a": 0.5, "b": 1.0, "c": 0.0}, {"a": 1.0, "b": 1.0, "c": 0.0}
    c = dictionary.compare(before, after, ["a", "b", "c"])
    assert (c["queries"], c["better"], c["worse"]) == (3, 1, 0) and c["low"] <= c["diff"] <= c["high"]
    assert dictionary.compare(before, after, [])["diff"] is None
    up = {"all": c, "subset": dictionary.compare(before, after, ["a"])}
    assert dictionary.goal({"bm25": up, "hybrid": up}) == "met"
    down = {"all": dictionary.compare(after, before, ["a", "b"]), "subset": dictionary.compare(after, before, ["a"])}
    assert dictionary.goal({"bm25": up, "hybrid": down}) == "not met"
    empty = {"all": dictionary.compare(before, before, ["a"]), "subset": dictionary.compare(before, before, [])}
    assert dictionary.goal({"bm25": empty}) == "untested"
    changes = dictionary.by_term({"a": ["x", "y"], "b": ["x"]}, before, after)
    assert {t["term"]: (t["questions"], t["change"]) for t in changes} == {"x": (2, 0.5), "y": (1, 0.5)}


@pytest.mark.milvus  # opens Milvus Lite: not in `make test-unit`
def test_the_benchmark_measures_the_sample_knowledge_base_before_and_after(tmp_path):
    spec = next(s for s in dictionary.SETS if s[1] == "sample")
    record = dictionary.measure(sets=[spec], folder=tmp_path / "data", limit=50)
    (row,) = record["sets"]
    assert (row["set"], row["queries"], row["documents"]) == ("sample", 36, 10) and row["chunks"] > 10
    assert 0 < row["terms"] <= 50 and row["kinds"]["heading"] + row["kinds"]["code"] == row["terms"]
    assert 0 <= row["subset"] <= row["queries"] and row["goal"] in ("met", "not met", "untested")
    assert len(row["subset_questions"]) == row["subset"] and all(q["terms"] for q in row["subset_questions"])
    for mode in dictionary.MODES:
        every, subset = row["modes"][mode]["all"], row["modes"][mode]["subset"]
        assert every["queries"] == 36 and 0 <= every["before"] <= 1 and 0 <= every["after"] <= 1
        assert subset["queries"] == row["subset"]
    text = dictionary.render({**record, "quick": False, "machine": "test machine", "load": "load"})
    assert text.startswith("#### ") and text.count("| sample KB") == 2 and "Goal (" in text

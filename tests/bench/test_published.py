"""Figures shown as measured come from benchmark records: the README tables are exactly what
`python -m bench.publish` renders from bench/results/*.json and rag_core/embedding/tradeoff.json, and
the app's embedder trade-off is read from the same file."""

from __future__ import annotations

import json

import pytest

from bench import chunking, explain, ingest, latency, quality, tradeoff
from bench.common import RESULTS, load
from bench.publish import BLOCKS, READMES, publish
from rag_core.embedding import catalog

RENDERS = {"chunking": chunking.render, "ingest": ingest.render, "latency": latency.render,
           "quality": quality.render, "explain": explain.render}


def test_the_readme_tables_are_rendered_from_the_records():
    assert publish(check=True) == [], "run `python -m bench.publish` (or the benchmark) to regenerate them"


def test_every_generated_block_is_in_a_readme():
    text = "".join(p.read_text(encoding="utf-8") for p in READMES)
    for name in BLOCKS:
        assert f"<!-- bench:{name} " in text and f"<!-- /bench:{name} -->" in text


@pytest.mark.parametrize("name", sorted(RENDERS))
def test_each_published_record_renders_with_its_machine(name):
    record = load(name)
    assert record is not None and record["benchmark"] == name and not record["quick"]
    text = RENDERS[name](record)
    assert text.startswith("#### ") and record["machine"] in text and "|---" in text


def test_a_changed_figure_makes_the_check_fail(tmp_path, monkeypatch):
    record = load("chunking")
    record["corpora"]["COVID-QA"]["ours_mb_s"] += 1.0
    changed = tmp_path / "chunking.json"
    changed.write_text(json.dumps(record), encoding="utf-8")
    monkeypatch.setattr("bench.common.RESULTS", tmp_path)
    for other in ("ingest", "latency", "quality", "explain"):
        (tmp_path / f"{other}.json").write_text((RESULTS / f"{other}.json").read_text(encoding="utf-8"))
    assert "README.md: results" in publish(check=True)


def test_the_app_shows_the_published_tradeoff():
    record = json.loads(catalog.DATA.read_text(encoding="utf-8"))
    data = catalog.load()
    assert data.sets == tuple(s["label"] for s in record["sets"]) and list(data.bm25) == record["bm25"]
    rows = catalog.tradeoff_rows()
    for e in record["embedders"]:
        dense = next(r for r in rows if r["embedder"] == e["provider"] and r["mode"] == "dense")
        assert [dense[s] for s in data.sets] == e["dense"]
    assert tradeoff.render(record).count("\n| ") == 2 + 2 * len(record["embedders"])  # header, BM25, 2 per embedder

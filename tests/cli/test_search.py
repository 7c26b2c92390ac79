"""`search` and `explain` on the command line (in process, same code path as `python -m rag_core`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_core.cli import main
from tests.helpers import SAMPLE_KB

pytestmark = pytest.mark.milvus  # opens Milvus Lite in its tests: not in `make test-unit`

DOCS = ["runbooks/cpu_high.md", "runbooks/disk_full.md", "policies/oncall_zh.md"]


def run(capsys, data: Path, *argv: str) -> tuple[int, str, str]:
    code = main(["--data-dir", str(data), *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cli-retrieval")
    assert main(["--data-dir", str(path), "ingest", *(str(SAMPLE_KB / d) for d in DOCS), "--prefix", "kb",
                 "--quiet"]) == 0
    return path


def test_search_json_carries_rerank_fields_and_structured_drops(data, capsys):
    code, out, err = run(capsys, data, "search", "disk space cleanup", "--retrieve-k", "10", "--return-n", "3",
                         "--json")
    result = json.loads(out)
    assert code == 0 and err == ""
    assert result["rerank"] is None and result["warnings"] == [] and result["params"]["rerank"]["enabled"]
    for h in result["raw_hits"]:
        assert h["fused_rank"] == h["rank"] and h["rerank_score"] is None
        assert (h["drop"] is None) == (h["status"] == "kept")
        if h["drop"]:
            assert h["drop"]["kind"] == h["fate"]
    assert {d["reason"] for d in result["dropped"]} == {h["status"] for h in result["raw_hits"] if h["drop"]}


def test_a_score_threshold_per_search_mode_from_the_option_and_the_setting(data, capsys):
    code, out, _ = run(capsys, data, "search", "disk space cleanup", "--mode", "dense", "--json")
    scores = [h["score"] for h in json.loads(out)["raw_hits"]]
    threshold = round((scores[1] + scores[2]) / 2, 6)
    code, out, err = run(capsys, data, "search", "disk space cleanup", "--mode", "dense", "--score-threshold",
                         str(threshold), "--json")
    result = json.loads(out)
    assert code == 0 and result["params"]["score_threshold"] == threshold and len(result["evidence"]) == 2
    below = [h for h in result["raw_hits"] if h["fate"] == "below_threshold"]
    assert len(below) == len(scores) - 2 and below[0]["status"].startswith("below threshold (")
    # the setting of one mode does not touch another mode's scores
    code, out, _ = run(capsys, data, "--set", "rag.score-threshold.dense=0.99", "search", "disk space cleanup",
                       "--mode", "bm25", "--json")
    assert json.loads(out)["params"]["score_threshold"] is None and json.loads(out)["evidence"]
    code, out, err = run(capsys, data, "--set", "rag.score-threshold.dense=0.99", "search", "disk space cleanup",
                         "--mode", "dense")
    assert code == 0 and "warning: Every hit scored below the dense score threshold 0.99" in err
    code, _, err = run(capsys, data, "search", "x", "--score-threshold", "-1")
    assert code != 0 and "rag.score-threshold.hybrid = -1.0 (from search options) must be at least 0" in err


def test_explain_prints_the_verdict_and_every_chunk(data, capsys):
    code, out, _ = run(capsys, data, "explain", "How do I free disk space?", "--expect", "kb/oncall_zh.md",
                       "--retrieve-k", "5", "--return-n", "3")
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("kb/oncall_zh.md is not in the evidence.")
    assert "Smallest change: retrieve-k ≥" in lines[0]
    rows = [line for line in lines if "kb/oncall_zh.md#chunk-" in line and line.startswith("*")]
    assert len(rows) >= 5 and all("beyond retrieve-k (5)" in r for r in rows)


def test_explain_json_and_an_answer_without_a_document(data, capsys):
    code, out, _ = run(capsys, data, "explain", "what to do when the disk is full", "--answer", "DiskSpaceLow",
                       "--json")
    result = json.loads(out)
    assert code == 0 and result["doc_id"] == "kb/disk_full.md" and result["answer"]["found"]
    assert {"verdict", "cause", "fix", "chunks", "evidence", "depth"} <= result.keys()
    holders = set(next(iter(result["answer"]["spans"]))["chunks"])
    assert {c["chunk_index"] for c in result["chunks"] if c["target"]} >= holders


@pytest.mark.parametrize(("argv", "message"), [
    (["explain", "disk", "--expect", "kb/nope.md"], "error: No document 'kb/nope.md' in the knowledge base"),
    (["explain", "disk", "--expect", "kb/disk_full.md#chunk-99"],
     "error: kb/disk_full.md has chunks 0 to 12; there is no chunk-99."),
    (["explain", "disk"], "error: Say what was expected"),
    (["explain", "  ", "--expect", "kb/disk_full.md"], "error: The query is empty"),
    (["explain", "disk", "--expect", "kb/disk_full.md", "--return-n", "50", "--retrieve-k", "10"],
     "error: return-n (50) cannot be larger than retrieve-k (10)"),
])
def test_explain_bad_input_is_one_clear_line(data, capsys, argv, message):
    code, out, err = run(capsys, data, *argv)
    assert code == 2 and out == "" and err.startswith(message) and err.count("\n") == 1


def test_tag_and_search_with_filters(data, capsys):
    code, out, _ = run(capsys, data, "tag", "kb/disk_full.md", "team=sre", "team=dba", "--json")
    assert code == 0 and json.loads(out)["metadata"]["team"] == ["sre", "dba"]
    assert json.loads(out)["metadata"]["folder"] == ["kb"]
    code, out, _ = run(capsys, data, "search", "disk space cleanup", "--filter", "team=sre", "--filter",
                       "folder=kb/", "--json")
    result = json.loads(out)
    assert code == 0 and {h["doc_id"] for h in result["raw_hits"]} == {"kb/disk_full.md"}
    assert result["scope"]["matched"] == 1 and result["scope"]["removed"] == 2
    code, _, err = run(capsys, data, "search", "disk", "--filter", "owner=x")
    assert code != 0 and "Unknown filter key 'owner'. Known keys: folder, type, ingested, team." in err
    code, _, err = run(capsys, data, "tag", "kb/disk_full.md", "folder=x")
    assert code != 0 and "is built in" in err


def test_a_search_is_one_trace_whose_retriever_span_holds_what_json_prints(data, capsys):
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from rag_core import tracing
    from rag_core.tracing import semconv as sc

    spans = InMemorySpanExporter()
    tracing.install(tracing.TracingConfig(), spans, simple=True)
    try:
        code, out, _ = run(capsys, data, "search", "disk space cleanup", "--return-n", "3", "--json")
    finally:
        tracing.install(tracing.TracingConfig(), pinned=False)
    assert code == 0
    finished = spans.get_finished_spans()
    assert len({s.context.trace_id for s in finished}) == 1
    (root,) = [s for s in finished if s.parent is None]
    assert root.name == "retrieve"
    keys = [p["document_id"] for p in json.loads(out)["projection"]]
    assert [root.attributes[sc.document(i, sc.DOCUMENT_ID)] for i in range(len(keys))] == keys
    assert {"embed", "hybrid_search", "fusion", "postprocess", "projection"} <= {s.name for s in finished}


def test_search_and_explain_take_a_history_file_of_role_lines(data, capsys, tmp_path):
    history = tmp_path / "chat.txt"
    history.write_text("user: How do I free disk space on a node?\nassistant: Check the disk first.\n"
                       "Then clean up [kb/disk_full.md#chunk-6].\n", "utf-8")
    code, out, _ = run(capsys, data, "search", "Which command shows it?", "--history", str(history), "--json")
    rewrite = json.loads(out)["rewrite"]
    assert code == 0 and rewrite["outcome"] == "rewritten" and rewrite["turns"] == 2
    assert rewrite["searched"].startswith("Which command shows it? (free disk space node")
    code, out, _ = run(capsys, data, "explain", "Which command shows it?", "--history", str(history), "--expect",
                       "kb/disk_full.md", "--json")
    assert code == 0 and json.loads(out)["rewrite"] == rewrite
    code, out, _ = run(capsys, data, "explain", "Which command shows it?", "--history", str(history), "--expect",
                       "kb/disk_full.md")
    assert code == 0 and out.splitlines()[0].startswith(f"Searched as: {rewrite['searched']} (rewritten, offline; ")
    code, out, _ = run(capsys, data, "search", "Which command shows it?", "--json")  # no history: nothing rewritten
    assert code == 0 and json.loads(out)["rewrite"] is None


def test_a_query_file_of_conversations_searches_each_last_question_after_its_own_turns(data, capsys, tmp_path):
    queries = tmp_path / "conversations.jsonl"
    queries.write_text("\n".join(json.dumps(row) for row in (
        {"id": "turns", "turns": [{"role": "user", "content": "How do I free disk space on a node?"},
                                  {"role": "user", "content": "Which command shows it?"}]},
        {"id": "history", "query": "Which command shows it?",
         "history": [{"role": "user", "content": "How long can an order stay unpaid?"}]},
        {"id": "alone", "query": "Which command shows it?"})) + "\n", "utf-8")
    code, out, _ = run(capsys, data, "search", "--queries", str(queries), "--json", "--quiet")
    rows = {row["id"]: row for row in map(json.loads, out.splitlines())}
    assert code == 0 and rows["alone"]["rewrite"] is None
    assert rows["turns"]["rewrite"]["searched"].startswith("Which command shows it? (free disk space node")
    assert rows["history"]["rewrite"]["searched"].startswith("Which command shows it? (order stay unpaid")


def test_search_json_carries_the_bm25_terms_of_the_query_and_of_every_hit(data, capsys):
    code, out, err = run(capsys, data, "search", "磁盤 disk cleanup", "--mode", "bm25", "--retrieve-k", "5", "--json")
    result = json.loads(out)
    assert code == 0 and err == ""
    assert result["query_terms"] == ["磁盘", "disk", "cleanup"]  # Traditional folded to Simplified
    assert result["keywords"]["scored_by"] == "milvus" and result["keywords"]["exact"] == len(result["raw_hits"])
    for h in result["raw_hits"]:
        assert h["matched_terms"] and set(h["term_shares"]) == set(h["matched_terms"]) == set(h["term_scores"])
        assert h["bm25_exact"] is True


def test_search_prints_the_bm25_terms_each_piece_of_evidence_contains(data, capsys):
    code, out, _ = run(capsys, data, "search", "disk cleanup", "--mode", "bm25")
    assert code == 0 and "Evidence: (BM25 terms of the query: disk cleanup)" in out
    assert "  terms: contains disk " in out and "% (of BM25 " in out

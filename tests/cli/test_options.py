"""CLI usability: every option explained, `search` takes every debugger knob and a batch of queries,
settings and loader refusals end in one clear line. In process, on isolated data dirs."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

from rag_core.cli import build_parser, main
from rag_core.config import settings_table
from rag_core.retrieval.options import per_lookup
from tests.helpers import SAMPLE_KB

TIMINGS = ("timings",)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def without_timings(result: dict) -> dict:
    return {k: v for k, v in result.items() if k not in TIMINGS}


@pytest.fixture(scope="module")
def kb(tmp_path_factory, milvus) -> Path:
    data = tmp_path_factory.mktemp("cli-options")
    assert main(["--data-dir", str(data), "ingest", str(SAMPLE_KB), "--json", "--quiet"]) == 0
    return data


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_option_of_every_command_has_a_one_line_help() -> None:
    parser = build_parser()
    missing = []
    for name, sub in {"(global)": parser, **_subcommands(parser)}.items():
        for action in sub._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            text = (action.help or "").strip()
            if not text or "\n" in text:
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    assert not missing, f"options without a one-line help: {missing}"


def test_search_has_every_debugger_knob() -> None:
    # The debugger's controls (pages/debugger.py: query, mode, retrieve-k, return-n, cap, fusion, RRF k,
    # dense and BM25 weights) are all options of `search`.
    options = {o for a in _subcommands(build_parser())["search"]._actions for o in a.option_strings}
    assert {"--mode", "--retrieve-k", "--return-n", "--max-chunks-per-document", "--fusion", "--rrf-k",
            "--dense-weight", "--bm25-weight", "--queries", "--json"} <= options


def test_search_fusion_and_weights_take_effect(kb: Path, capsys) -> None:
    code, out, _ = run(capsys, "--data-dir", str(kb), "search", "disk full", "--mode", "hybrid", "--fusion", "rrf",
                       "--rrf-k", "10", "--dense-weight", "0.25", "--bm25-weight", "0.75", "--retrieve-k", "8",
                       "--return-n", "3", "--json")
    params = json.loads(out)["params"]
    assert code == 0
    assert (params["search_mode"], params["fusion"], params["rrf_k"], params["dense_weight"], params["bm25_weight"],
            params["retrieve_k"], params["return_n"]) == ("hybrid", "rrf", 10, 0.25, 0.75, 8, 3)
    # the same as the global --set form
    code, out2, _ = run(capsys, "--data-dir", str(kb), "--set", "rag.fusion=rrf", "--set", "rag.rrf-k=10",
                        "--set", "rag.dense-weight=0.25", "--set", "rag.bm25-weight=0.75", "search", "disk full",
                        "--retrieve-k", "8", "--return-n", "3", "--json")
    assert code == 0 and without_timings(json.loads(out2)) == without_timings(json.loads(out))


def test_search_json_is_what_the_debugger_computes(kb: Path, capsys) -> None:
    # The debugger passes its sliders to the lookup and keeps the configured projection budgets; so does search.
    from dataclasses import replace

    from rag_core.retrieval import params_from_settings
    from tests.helpers import make_workbench

    code, out, _ = run(capsys, "--data-dir", str(kb), "search", "restart the service", "--mode", "bm25",
                       "--retrieve-k", "30", "--return-n", "8", "--max-chunks-per-document", "3", "--json")
    assert code == 0
    wb = make_workbench(kb)
    try:  # the other search settings are the knowledge base's own (its embedder's measured fusion), as the debugger's
        search = replace(params_from_settings(wb.settings).search, mode="bm25")
        expected = wb.retriever.lookup("restart the service", retrieve_k=30, return_n=8, max_chunks_per_document=3,
                                       search=search).to_dict()
    finally:
        wb.close()
    assert without_timings(json.loads(out)) == without_timings(expected)
    assert len(expected["projection"]) <= 5 < len(expected["evidence"])  # the budget, not return-n


@pytest.mark.parametrize(("argv", "message"), [
    (["--dense-weight", "nan"], "rag.dense-weight = nan (from search options) is not a finite number"),
    (["--bm25-weight", "2"], "rag.bm25-weight = 2.0 (from search options) must be at most 1"),
    (["--rrf-k", "0"], "rag.rrf-k = 0 (from search options) must be at least 1"),
    (["--retrieve-k", "5000"], "rag.retrieve-k = 5000 (from search options) must be at most 1000"),
])
def test_bad_search_options_get_one_clear_line(tmp_path: Path, capsys, argv: list[str], message: str) -> None:
    code, _, err = run(capsys, "--data-dir", str(tmp_path), "search", "x", *argv)
    assert code == 2 and message in err and "Traceback" not in err and "unexpected" not in err


def test_unknown_choice_is_refused_by_argparse(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["search", "x", "--fusion", "magic"])
    assert info.value.code == 2 and "invalid choice: 'magic'" in capsys.readouterr().err


def test_batch_search_prints_one_result_per_line(kb: Path, tmp_path: Path, capsys) -> None:
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"id": "disk", "query": "disk full", "relevant": ["ignored.md"]}\n\n'
                       '{"query": "向量检索"}\n'
                       '{"id": "long", "query": "' + "x" * 5000 + '"}\n', encoding="utf-8")
    code, out, err = run(capsys, "--data-dir", str(kb), "search", "--queries", str(queries), "--mode", "bm25",
                         "--return-n", "3", "--json", "--quiet")
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 1 and "1 of 3 queries were refused" in err  # the over-long query, reported on its line
    assert [r["id"] for r in lines] == ["disk", "q3", "long"]
    assert lines[2]["error"].startswith("The query has 5000 characters")
    # each line is exactly what a single `search --json` prints, plus its id
    code, single, _ = run(capsys, "--data-dir", str(kb), "search", "disk full", "--mode", "bm25", "--return-n", "3",
                          "--json")
    assert code == 0 and without_timings(lines[0]) == {"id": "disk", **without_timings(json.loads(single))}
    assert lines[1]["evidence"][0]["doc_id"] == "product/vector_search_zh.md"

    csv_file = tmp_path / "queries.csv"
    csv_file.write_text("id,query\na,disk full\nb,\"cpu, high\"\n", encoding="utf-8")
    code, out, _ = run(capsys, "--data-dir", str(kb), "search", "--queries", str(csv_file), "--mode", "bm25", "--quiet")
    assert code == 0 and "== a: disk full" in out and "== b: cpu, high" in out and out.count("Evidence:") == 2


@pytest.mark.parametrize(("content", "name", "message"), [
    ('{"query": "a"}\n{"query": \n', "q.jsonl", "q.jsonl, line 2: not valid JSON"),
    ('{"id": "1", "query": ""}\n', "q.jsonl", "line 1: `query` is missing or empty"),
    ("question\nx\n", "q.csv", "the header must name the columns query"),
    ('{"id": "1", "query": "a"}\n{"id": "1", "query": "b"}\n', "q.jsonl", "query id '1' appears twice"),
    ("a query\n", "q.txt", "use a .jsonl or .csv file"),
])
def test_bad_query_files_are_refused_before_anything_runs(tmp_path: Path, capsys, content: str, name: str,
                                                         message: str) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    code, out, err = run(capsys, "--data-dir", str(tmp_path / "d"), "search", "--queries", str(path))
    assert code == 2 and message in err and out == "" and not (tmp_path / "d").exists()


def test_search_needs_exactly_one_of_query_and_queries(tmp_path: Path, capsys) -> None:
    for argv in (["search"], ["search", "x", "--queries", "q.jsonl"]):
        code, _, err = run(capsys, "--data-dir", str(tmp_path), *argv)
        assert code == 2 and "give one query, or --queries FILE" in err


def test_config_markdown_is_the_readme_table(capsys) -> None:
    code, out, _ = run(capsys, "config", "--markdown")
    assert code == 0 and out == settings_table(per_lookup())


def test_settings_errors_are_one_clear_line(tmp_path: Path, capsys) -> None:
    code, _, err = run(capsys, "--config", str(tmp_path), "config")
    assert code == 2 and "is a folder; give the path of a rag.toml file" in err and "unexpected" not in err
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    code, _, err = run(capsys, "--data-dir", str(a_file), "docs")
    assert code == 2 and "is a file, not a folder" in err and "unexpected" not in err
    code, _, err = run(capsys, "--set", "rag.dense-weight=inf", "config")
    assert code == 2 and "is not a finite number" in err


@pytest.mark.milvus
@pytest.mark.skipif(sys.platform == "win32", reason="symlinks")
def test_ingest_skips_a_link_out_of_the_folder(tmp_path: Path, capsys) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\nroot:x:0:0\n", encoding="utf-8")
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "notes.md").write_text("# Notes\n\nSome text.\n", encoding="utf-8")
    (kb / "passwd.md").symlink_to(secret)
    data = tmp_path / "d"
    code, out, _ = run(capsys, "--data-dir", str(data), "ingest", str(kb), "--json", "--quiet")
    reports = {r["doc_id"] or Path(r["path"]).name: r for r in json.loads(out)}
    assert code == 0  # a skip is a rule applied, not a failure
    assert reports["notes.md"]["status"] == "added"
    skipped = reports["passwd.md"]
    assert skipped["status"] == "skipped" and "symbolic link" in skipped["error"] and str(secret) in skipped["error"]
    assert not any(p.name == "passwd.md" for p in data.rglob("*"))  # nothing was copied into the kept originals
    code, out, _ = run(capsys, "--data-dir", str(data), "ingest", str(kb), "--quiet")
    assert code == 0 and "skipped   " in out and "1 unchanged, 0 failed, 1 skipped" in out


def test_chunk_refuses_a_document_over_the_text_limit(tmp_path: Path, capsys) -> None:
    big = tmp_path / "big.md"
    big.write_text("word " * 400, encoding="utf-8")
    code, _, err = run(capsys, "--set", "loader.max-text-chars=1000", "chunk", str(big))
    assert code == 2 and "2,000 characters of text, over the 1,000-character limit" in err
    assert "loader.max-text-chars" in err


def test_eval_filter_is_checked_before_anything_runs(tmp_path, capsys) -> None:
    code, _, err = run(capsys, "--data-dir", str(tmp_path), "eval", "sample", "--filter", "folder", "--no-save")
    assert code != 0 and "Filter 'folder' is not key=value" in err
    assert not (tmp_path / "milvus.db").exists()


def test_search_says_what_the_agent_is_given_when_blocks_grow(kb: Path, capsys) -> None:
    code, out, _ = run(capsys, "--data-dir", str(kb), "search", "How do I free disk space?", "--expand", "parent",
                       "--context-tokens", "400")
    assert code == 0
    given = out.split("Given to the agent (", 1)[1]
    assert given.split(" tokens", 1)[0].endswith("of 400") and "rag.expand = parent" in given
    assert "- [runbooks/disk_full.md#chunk-" in given and "section '" in given
    assert "- left out: " in given and "(projection total tokens (400))" in given
    code, out, _ = run(capsys, "--data-dir", str(kb), "search", "How do I free disk space?", "--merge", "off")
    assert code == 0 and "Given to the agent" not in out  # nothing grew, merged or was left out

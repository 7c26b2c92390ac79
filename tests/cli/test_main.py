"""The CLI, in process (same code path as `python -m rag_core`), on isolated data dirs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rag_core.cli import main
from tests.helpers import REPO, SAMPLE_KB


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory, milvus) -> Path:
    data = tmp_path_factory.mktemp("cli")
    code = main(["--data-dir", str(data), "ingest", str(SAMPLE_KB), "--json", "--quiet"])
    assert code == 0
    return data


def test_ingest_docs_search_delete(kb_dir: Path, capsys) -> None:
    code, out, _ = run(capsys, "--data-dir", str(kb_dir), "ingest", str(SAMPLE_KB), "--json", "--quiet")
    assert code == 0 and {r["status"] for r in json.loads(out)} == {"unchanged"}

    code, out, _ = run(capsys, "--data-dir", str(kb_dir), "docs", "--json")
    docs = json.loads(out)
    assert code == 0 and len(docs) == 10 and "runbooks/cpu_high.md" in {d["doc_id"] for d in docs}

    code, out, _ = run(capsys, "--data-dir", str(kb_dir), "search", "向量检索", "--retrieve-k", "20",
                       "--return-n", "5", "--max-chunks-per-document", "2", "--json")
    result = json.loads(out)
    assert code == 0
    assert list(result)[:1] == ["query"] and {"params", "raw_hits", "evidence", "dropped", "projection",
                                              "timings"} <= result.keys()
    assert result["params"]["retrieve_k"] == 20 and result["params"]["return_n"] == 5
    assert len(result["raw_hits"]) == 20 and 0 < len(result["evidence"]) <= 5
    assert result["evidence"][0]["doc_id"] == "product/vector_search_zh.md"
    assert all(h["status"] for h in result["raw_hits"])

    code, out, _ = run(capsys, "--data-dir", str(kb_dir), "search", "disk full", "--mode", "dense")
    assert code == 0 and "Evidence:" in out and "runbooks/disk_full.md#chunk-" in out


@pytest.mark.milvus
def test_delete(tmp_path: Path, capsys) -> None:
    doc = tmp_path / "notes.md"
    doc.write_text("# Notes\n\nSome text about deleting things.\n", encoding="utf-8")
    assert run(capsys, "--data-dir", str(tmp_path / "d"), "ingest", str(doc), "--quiet")[0] == 0
    code, out, _ = run(capsys, "--data-dir", str(tmp_path / "d"), "delete", "notes.md")
    assert code == 0 and "deleted notes.md" in out
    code, _, err = run(capsys, "--data-dir", str(tmp_path / "d"), "delete", "notes.md")
    assert code == 2 and "No document 'notes.md'" in err


@pytest.mark.milvus
def test_ingest_reports_bad_files_and_keeps_going(tmp_path: Path, capsys) -> None:
    (tmp_path / "good.md").write_text("# Good\n\nFine text.\n", encoding="utf-8")
    (tmp_path / "empty.md").write_bytes(b"")
    (tmp_path / "image.md").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    code, out, _ = run(capsys, "--data-dir", str(tmp_path / "d"), "ingest", str(tmp_path / "good.md"),
                       str(tmp_path / "empty.md"), str(tmp_path / "image.md"), str(tmp_path / "missing.md"),
                       "--json", "--quiet")
    reports = {Path(r["path"]).name: r for r in json.loads(out)}
    assert code == 1
    assert reports["good.md"]["status"] == "added"
    assert reports["empty.md"]["status"] == "failed" and "empty" in reports["empty.md"]["error"]
    assert reports["image.md"]["status"] == "failed" and "binary" in reports["image.md"]["error"].lower()
    assert reports["missing.md"]["status"] == "failed" and "missing.md" in reports["missing.md"]["error"]


def test_chunk_preview(capsys) -> None:
    code, out, _ = run(capsys, "chunk", str(SAMPLE_KB / "runbooks" / "cpu_high.md"), "--max-size", "400",
                       "--overlap", "50", "--json")
    data = json.loads(out)
    text = (SAMPLE_KB / "runbooks" / "cpu_high.md").read_text(encoding="utf-8")
    assert code == 0 and data["max_size"] == 400 and data["summary"]["chunks"] == len(data["chunks"])
    assert all(text[c["start"]:c["end"]] == c["text"] and len(c["text"]) <= 400 for c in data["chunks"])
    code, _, err = run(capsys, "chunk", str(SAMPLE_KB / "runbooks" / "cpu_high.md"), "--max-size", "100",
                       "--overlap", "100")
    assert code == 2 and "overlap" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["search", "   "], "The query is empty"),
        (["search", "x", "--return-n", "50"], "cannot be larger than retrieve-k"),
        (["--set", "chunk.max-sise=3", "docs"], "Did you mean chunk.max-size?"),
        (["--set", "novalue", "docs"], "expected key=value"),
    ],
)
def test_bad_input_gets_one_clear_line(kb_dir: Path, capsys, argv: list[str], message: str) -> None:
    code, _, err = run(capsys, "--data-dir", str(kb_dir), *argv)
    assert code == 2 and message in err and "Traceback" not in err


@pytest.mark.milvus
def test_search_on_an_empty_knowledge_base(tmp_path: Path, capsys) -> None:
    code, _, err = run(capsys, "--data-dir", str(tmp_path), "search", "anything")
    assert code == 2 and "The knowledge base is empty" in err


def test_config_never_shows_secrets(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-secret-123")
    monkeypatch.setenv("MILVUS_URI", "http://root:hunter2@milvus:19530")
    code, out, _ = run(capsys, "--data-dir", str(tmp_path), "config", "--json")
    assert code == 0 and "sk-secret-123" not in out and "hunter2" not in out
    assert json.loads(out)["settings"]["milvus.uri"] == "http://***@milvus:19530"


@pytest.mark.parametrize("key", ["chat.base-url", "embedding.base-url", "rerank.base-url"])
def test_config_masks_credentials_in_every_url_setting(tmp_path: Path, capsys, key: str) -> None:
    url = "https://bob:pa55word@llm.example.test/v1?api_key=sk-in-the-query&model=x"
    for flags in (["--json"], []):
        code, out, _ = run(capsys, "--data-dir", str(tmp_path), "--set", f"{key}={url}", "config", *flags)
        assert code == 0 and "pa55word" not in out and "sk-in-the-query" not in out and "bob" not in out
        assert "https://***@llm.example.test/v1?api_key=***&model=x" in out


@pytest.mark.milvus
def test_python_dash_m_entry_point(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "rag_core", "--data-dir", str(tmp_path), "docs", "--json"],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and json.loads(out.stdout) == []


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "unexpected" not in err, err
    return lines[0]


def test_an_argument_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    """Bytes of an argument that are not UTF-8 reach Python as lone surrogates (surrogateescape): refused before
    anything is opened, in one line (#21 item 5). A real process, so the bytes come from the real argv."""
    out = subprocess.run([sys.executable, "-m", "rag_core", "--data-dir", str(tmp_path), "search", b"disk \xff"],
                         cwd=REPO, capture_output=True, timeout=120)
    assert out.returncode == 2 and out.stdout == b""
    assert one_error_line(out.stderr.decode()) == (
        "error: the query: character 6 is the byte 0xFF, which is not UTF-8, near 'disk \\xff'; send it as UTF-8 "
        "text.")
    assert not (tmp_path / "milvus.db").exists()


@pytest.mark.parametrize(("argv", "message"), [
    (["explain", "disk", "--expect", "a\udcff.md"], "error: --expect: character 2 is the byte 0xFF"),
    (["chat", "--offline", "disk", "full\ud800"], "error: the question (argument 2): character 5 is a lone UTF-16"),
    (["--set", "chat.model=q\udc80", "docs"], "error: --set: character 13 is the byte 0x80"),
])
def test_text_arguments_are_checked(kb_dir: Path, capsys, argv: list[str], message: str) -> None:
    code, out, err = run(capsys, "--data-dir", str(kb_dir), *argv)
    assert code == 2 and out == "" and one_error_line(err).startswith(message)


def test_a_query_file_with_a_lone_surrogate_is_refused_in_one_line(kb_dir: Path, tmp_path: Path, capsys) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"query": "disk full"}\n{"id": "two", "query": "disk \\ud800"}\n', encoding="utf-8")
    code, out, err = run(capsys, "--data-dir", str(kb_dir), "search", "--queries", str(queries), "--json", "--quiet")
    assert code == 2 and out == ""
    assert one_error_line(err).startswith(f"error: {queries}, line 2: query: character 6 is a lone UTF-16 surrogate")
    csv_file = tmp_path / "q.csv"
    csv_file.write_bytes(b"query\ndisk full\ndisk \xff\n")
    code, out, err = run(capsys, "--data-dir", str(kb_dir), "search", "--queries", str(csv_file), "--quiet")
    assert (
        code == 2
        and one_error_line(err) == f"error: {csv_file}, line 3: byte 0xFF is not UTF-8; save the file as UTF-8."
    )


def test_chat_refuses_a_stdin_line_that_is_not_utf8_and_goes_on(kb_dir: Path, capsys, monkeypatch) -> None:
    import io

    # What Python makes of piped stdin in the C locale: bytes that are not UTF-8 become surrogates.
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"disk \xff\ndisk full\n"), encoding="utf-8",
                                                       errors="surrogateescape"))
    code, out, err = run(capsys, "--data-dir", str(kb_dir), "chat", "--offline")
    assert code == 2  # a turn failed: a script piping questions learns it
    assert "error: the question on line 1: character 6 is the byte 0xFF" in err and "Traceback" not in err
    assert "runbooks/disk_full.md#chunk-" in out  # the next question was answered

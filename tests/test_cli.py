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
def kb_dir(tmp_path_factory) -> Path:
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


def test_delete(tmp_path: Path, capsys) -> None:
    doc = tmp_path / "notes.md"
    doc.write_text("# Notes\n\nSome text about deleting things.\n", encoding="utf-8")
    assert run(capsys, "--data-dir", str(tmp_path / "d"), "ingest", str(doc), "--quiet")[0] == 0
    code, out, _ = run(capsys, "--data-dir", str(tmp_path / "d"), "delete", "notes.md")
    assert code == 0 and "deleted notes.md" in out
    code, _, err = run(capsys, "--data-dir", str(tmp_path / "d"), "delete", "notes.md")
    assert code == 2 and "No document 'notes.md'" in err


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


def test_search_on_an_empty_knowledge_base(tmp_path: Path, capsys) -> None:
    code, _, err = run(capsys, "--data-dir", str(tmp_path), "search", "anything")
    assert code == 2 and "The knowledge base is empty" in err


def test_config_never_shows_secrets(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-secret-123")
    monkeypatch.setenv("MILVUS_URI", "http://root:hunter2@milvus:19530")
    code, out, _ = run(capsys, "--data-dir", str(tmp_path), "config", "--json")
    assert code == 0 and "sk-secret-123" not in out and "hunter2" not in out
    assert json.loads(out)["settings"]["milvus.uri"] == "http://***@milvus:19530"


def test_python_dash_m_entry_point(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "rag_core", "--data-dir", str(tmp_path), "docs", "--json"],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and json.loads(out.stdout) == []

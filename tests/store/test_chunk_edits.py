"""Disabled chunks: kept beside the index crash-safely (a real process SIGKILLed while it edits), left out of every
lookup with reason `disabled`, on the CLI and the API alike, kept across an unchanged re-upload, dropped as a
conflict when the chunk's text changed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

from rag_core.cli import main
from rag_core.errors import RagError
from rag_core.kb.chunk_edits import history, set_disabled
from rag_core.records import Chunk
from rag_core.retrieval import KnowledgeRetriever, SearchOptions
from rag_core.retrieval.explain import explain
from rag_core.retrieval.memory import InMemorySearchPort
from rag_core.service.app import create_app
from rag_core.store.edits import ChunkEdits
from tests.helpers import REPO, SAMPLE_KB, make_workbench
from tests.service import live

BM25 = SearchOptions(mode="bm25")


def test_a_process_killed_while_editing_leaves_the_old_or_the_new_state(tmp_path):
    path = tmp_path / "kb.edits.json"
    script = (f"import sys; sys.path.insert(0, {str(REPO)!r})\n"
              "from pathlib import Path\nfrom rag_core.store.edits import ChunkEdits\n"
              f"edits = ChunkEdits(Path({str(path)!r}))\n"
              "i = 0\nprint('ready', flush=True)\n"
              "while True:\n"
              "    edits.set_disabled('a.md#chunk-0', doc_id='a.md', version='v', chunk_hash='h', disabled=i % 2 == 0,"
              " who='t')\n    i += 1\n")
    for delay in (0.05, 0.2, 0.4):
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 10
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        record = json.loads(path.read_text(encoding="utf-8"))["a.md#chunk-0"]  # whole, parseable JSON
        assert record["disabled"] in (True, False) and record["history"]
        assert ChunkEdits(path).history("a.md#chunk-0") == record["history"]
    # a killed write leaves at most its temporary file behind, never a half-written edits file


def test_a_disabled_chunk_is_a_drop_with_reason_disabled_and_explain_says_so():
    port = InMemorySearchPort({"a.md": [Chunk(0, "alpha alpha", 0, 11, "", (), 0), Chunk(1, "alpha beta", 13, 23, "",
                                                                                        (), 0)]})
    retriever = KnowledgeRetriever(port)
    set_disabled(port.store, "a.md#chunk-0", True)
    result = retriever.lookup("alpha", search=BM25, retrieve_k=2, return_n=2)
    assert [(t.evidence_key, t.status) for t in result.traces] == [("a.md#chunk-0", "disabled"),
                                                                    ("a.md#chunk-1", "kept")]
    e = explain(retriever, port.store, "alpha", "a.md#chunk-0", search=BM25, retrieve_k=2, return_n=2)
    assert e.targets[0].fate == "disabled" and e.fix is None and "chunks enable a.md#chunk-0" in e.verdict
    set_disabled(port.store, "a.md#chunk-0", False)
    assert retriever.lookup("alpha", search=BM25, retrieve_k=2, return_n=2).traces[0].status == "kept"
    assert [h["what"] for h in history(port.store, "a.md#chunk-0")["history"]] == ["disabled", "enabled"]
    with pytest.raises(RagError, match="a.md has chunks 0 to 1; there is no chunk-5"):
        set_disabled(port.store, "a.md#chunk-5", True)


@pytest.mark.milvus
def test_cli_and_api_disable_alike_and_reupload_keeps_or_conflicts(tmp_path, local_embedder, capsys):
    data = tmp_path / "data"
    doc = tmp_path / "disk_full.md"
    doc.write_bytes((SAMPLE_KB / "runbooks" / "disk_full.md").read_bytes())
    cli = ["--data-dir", str(data), "--set", "milvus.lite-mode=exclusive"]
    assert main([*cli, "ingest", str(doc), "--quiet"]) == 0
    capsys.readouterr()
    assert main([*cli, "chunks", "disable", "disk_full.md#chunk-0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["disabled"] is True
    assert main([*cli, "chunks", "keywords", "disk_full.md#chunk-2", "frobzkeyword", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["keywords"] == ["frobzkeyword"]
    assert main([*cli, "chunks", "keywords", "disk_full.md#chunk-2", "--text", "x"]) != 0
    assert "--text is for `chunks edit`" in capsys.readouterr().err
    assert main([*cli, "search", "frobzkeyword", "--mode", "bm25", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["raw_hits"][0]["evidence_key"] == "disk_full.md#chunk-2"
    assert main([*cli, "search", "disk full", "--json"]) == 0
    statuses = {h["evidence_key"]: h["status"] for h in json.loads(capsys.readouterr().out)["raw_hits"]}
    assert statuses["disk_full.md#chunk-0"] == "disabled"
    wb = make_workbench(data, local_embedder)
    server = live.start(create_app(wb, token="", env={}))
    try:
        answer = httpx.patch(f"{server.url}/v1/documents/disk_full.md/chunks/1", json={"disabled": True})
        assert answer.status_code == 200 and answer.json()["history"][-1]["who"] == "api"
        found = httpx.get(f"{server.url}/v1/search", params={"query": "disk full"}).json()["raw_hits"]
        assert {h["evidence_key"] for h in found if h["status"] == "disabled"} == {"disk_full.md#chunk-0",
                                                                                   "disk_full.md#chunk-1"}
        assert httpx.patch(f"{server.url}/v1/documents/disk_full.md/chunks/999",
                           json={"disabled": True}).status_code == 400
        # an unchanged re-upload keeps the edits; a changed chunk-0 no longer carries its edit (a conflict)
        wb.ingestor.ingest_paths([doc], force=True)
        assert wb.retriever.lookup("disk full").traces  # still searchable
        off = {t.evidence_key for t in wb.retriever.lookup("disk full", retrieve_k=50).traces if t.fate == "disabled"}
        assert off == {"disk_full.md#chunk-0", "disk_full.md#chunk-1"}
        doc.write_text("# Brand new opening\n\nSomething else entirely about disk space.\n\n" + doc.read_text())
        (report,) = wb.ingestor.ingest_paths([doc])
        assert "disk_full.md#chunk-0" in report.to_dict()["diff"]["conflicts"]  # listed in the re-upload diff
        current = {f"disk_full.md#chunk-{c.chunk_index}": c.metadata["chunkHash"]
                   for c in wb.store.get_chunks("disk_full.md")}
        assert "disk_full.md#chunk-0" in wb.store.edits.conflicts(current)
        off = {t.evidence_key for t in wb.retriever.lookup("disk space", retrieve_k=50).traces if t.fate == "disabled"}
        assert "disk_full.md#chunk-0" not in off
    finally:
        server.stop()
        wb.close()


@pytest.mark.milvus
def test_an_edit_re_embeds_one_chunk_keeps_its_key_and_lasts_through_reindex(tmp_path, local_embedder):
    from rag_core.kb.chunk_edits import edit_chunk, revert

    wb = make_workbench(tmp_path / "data", local_embedder)
    try:
        assert wb.ingestor.ingest_paths([SAMPLE_KB / "runbooks" / "cpu_high.md"])[0].status == "added"
        before = {c.chunk_index: c for c in wb.store.get_chunks("cpu_high.md")}
        server = live.start(create_app(wb, token="", env={}))
        try:
            answer = httpx.patch(f"{server.url}/v1/documents/cpu_high.md/chunks/3",
                                 json={"keywords": ["zebrafrobnicate"], "questions": ["Who frobnicates zebras?"]})
            assert answer.status_code == 200, answer.text
            assert httpx.patch(f"{server.url}/v1/documents/cpu_high.md/chunks/3", json={}).status_code == 400
        finally:
            server.stop()
        edit_chunk(wb.store, wb.embedder, "cpu_high.md#chunk-3", text="Throttled pods: raise the CPU limit.")
        after = {c.chunk_index: c for c in wb.store.get_chunks("cpu_high.md")}
        assert after[3].id == before[3].id and after[3].content.startswith("Throttled pods: raise the CPU limit.")
        assert "Keywords: zebrafrobnicate" in after[3].content
        assert "Questions: Who frobnicates zebras?" in after[3].content
        assert {i: c.content for i, c in after.items() if i != 3} == {i: c.content for i, c in before.items() if i != 3}
        found = wb.retriever.lookup("zebrafrobnicate", retrieve_k=5, return_n=3).to_dict()
        assert found["evidence"][0]["evidence_key"] == "cpu_high.md#chunk-3" and found["evidence"][0]["edited"]
        assert found["raw_hits"][0]["edited"] and not any(h["edited"] for h in found["raw_hits"][1:])
        # re-indexing rebuilds from the original, then re-applies the edit (its base chunk is unchanged)
        wb.ingestor.reindex(["cpu_high.md"])
        again = {c.chunk_index: c for c in wb.store.get_chunks("cpu_high.md")}
        assert again[3].content == after[3].content and again[3].version != after[3].version
        record = revert(wb.store, wb.embedder, "cpu_high.md#chunk-3")
        assert wb.store.get_chunks("cpu_high.md")[3].content == before[3].content
        assert [h["who"] for h in record["history"]] == ["api", "local", "local"]
    finally:
        wb.close()

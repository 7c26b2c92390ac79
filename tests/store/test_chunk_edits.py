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
from rag_core.cli.audit import who
from rag_core.errors import RagError
from rag_core.kb.chunk_edits import history, set_disabled
from rag_core.records import Chunk
from rag_core.retrieval import KnowledgeRetriever, SearchOptions
from rag_core.retrieval.explain import explain
from rag_core.scope import parse_scope
from rag_core.service.app import create_app
from rag_core.store.edits import ChunkEdits
from tests.helpers import REPO, SAMPLE_KB, make_workbench
from tests.retrieval.memory import InMemorySearchPort
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
        deadline = time.monotonic() + 60  # its first write (a loaded machine may take a while)
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        record = json.loads(path.read_text(encoding="utf-8"))["a.md#chunk-0"]  # whole, parseable JSON
        assert record["disabled"] in (True, False) and record["history"]
        assert ChunkEdits(path).history("a.md#chunk-0") == record["history"]
    # a killed write leaves at most its temporary file behind, never a half-written edits file


def test_pending_edits_are_finished_or_undone_by_what_the_row_holds_and_a_live_writer_s_are_spared(tmp_path):
    edits = ChunkEdits(tmp_path / "kb.edits.json")

    def begin(key: str, content: str, **extra) -> None:
        edits.begin(key, doc_id="a.md", version="v", chunk_hash="h", changes={"text": content}, what="text edited",
                    who="t", content=content, writer={}, **extra)

    edits.set_disabled("a.md#chunk-1", doc_id="a.md", version="v", chunk_hash="h", disabled=True, who="t")
    begin("a.md#chunk-0", "new")
    begin("a.md#chunk-1", "new")
    begin("a.md#chunk-2", "new")
    rows = {"a.md#chunk-0": "new", "a.md#chunk-1": "old"}  # chunk-2: no row (an added chunk never written)
    assert edits.recover(lambda doc_id, key: rows.get(key), lambda pending: False) == []  # its writer still runs
    assert edits.recover(lambda doc_id, key: rows.get(key), lambda pending: True) == ["a.md#chunk-0"]
    after = ChunkEdits(tmp_path / "kb.edits.json").all()
    assert after["a.md#chunk-0"]["text"] == "new" and after["a.md#chunk-0"]["history"][-1]["what"] == "text edited"
    assert "text" not in after["a.md#chunk-1"] and after["a.md#chunk-1"]["disabled"]  # as it was
    assert "a.md#chunk-2" not in after and not edits.pending()


def test_conflicts_are_edits_whose_base_chunk_changed_or_went_and_added_chunks_whose_key_is_taken():
    edits = ChunkEdits()
    for i in range(4):
        edits.set_disabled(f"a.md#chunk-{i}", doc_id="a.md", version="v", chunk_hash=f"h{i}", disabled=i != 3,
                           who="t")
    edits.begin("a.md#chunk-7", doc_id="a.md", version="v", chunk_hash="x", changes={"added": True, "text": "mine"},
                what="added", who="t", content="mine", writer={})
    edits.finish("a.md#chunk-7")
    current = {"a.md#chunk-0": "h0", "a.md#chunk-1": "changed", "a.md#chunk-3": "changed"}
    assert edits.conflicts(current, "a.md") == ["a.md#chunk-1", "a.md#chunk-2"]  # 3 was enabled: nothing to keep
    assert edits.conflicts({**current, "a.md#chunk-7": "theirs"}, "a.md")[-1] == "a.md#chunk-7"
    assert edits.conflicts(current) == ["a.md#chunk-1"]  # without the document: only the keys given
    edits.let_go("a.md#chunk-1", "dropped", "t")
    assert edits.conflicts(current, "a.md") == ["a.md#chunk-2"]


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


def ingested_by_the_cli(tmp_path, capsys) -> tuple:
    """A copy of the sample disk runbook ingested by the CLI: (data dir, the copy, the CLI's leading arguments)."""
    data = tmp_path / "data"
    doc = tmp_path / "disk_full.md"
    doc.write_bytes((SAMPLE_KB / "runbooks" / "disk_full.md").read_bytes())
    cli = ["--data-dir", str(data), "--set", "milvus.lite-mode=exclusive"]
    assert main([*cli, "ingest", str(doc), "--quiet"]) == 0
    capsys.readouterr()
    return data, doc, cli


@pytest.mark.milvus
def test_cli_and_api_disable_alike_and_reupload_keeps_or_conflicts(tmp_path, local_embedder, capsys):
    data, doc, cli = ingested_by_the_cli(tmp_path, capsys)
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
        answer = httpx.patch(f"{server.url}/v1/documents/disk_full.md/chunks/1", json={"disabled": True}, timeout=60)
        assert answer.status_code == 200 and answer.json()["history"][-1]["who"] == "api"
        found = httpx.get(f"{server.url}/v1/search", params={"query": "disk full"}, timeout=60).json()["raw_hits"]
        assert {h["evidence_key"] for h in found if h["status"] == "disabled"} == {"disk_full.md#chunk-0",
                                                                                   "disk_full.md#chunk-1"}
        assert httpx.patch(f"{server.url}/v1/documents/disk_full.md/chunks/999",
                           json={"disabled": True}, timeout=60).status_code == 400
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
                                 json={"keywords": ["zebrafrobnicate"], "questions": ["Who frobnicates zebras?"]},
                                 timeout=60)
            assert answer.status_code == 200, answer.text
            assert httpx.patch(f"{server.url}/v1/documents/cpu_high.md/chunks/3", json={},
                               timeout=60).status_code == 400
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


@pytest.mark.milvus
def test_a_chunk_added_on_the_cli_and_the_api_is_indexed_marked_and_lasts(tmp_path, local_embedder, capsys):
    from rag_core.kb.chunk_edits import revert

    data, doc, cli = ingested_by_the_cli(tmp_path, capsys)
    assert main([*cli, "chunks", "add", "disk_full.md", "--text", "Quokkaflux drains the inode table.", "--json"]) == 0
    added = json.loads(capsys.readouterr().out)
    key = added["evidence_key"]
    assert added["added"] and added["history"][-1]["what"] == "added" and added["history"][-1]["who"] == who()
    for args, message in ((["disk_full.md", "--text", "  "], "The chunk text is empty"),
                          (["disk_full.md", "extra", "--text", "x"], "unexpected values 'extra'")):
        assert main([*cli, "chunks", "add", *args]) != 0
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert main([*cli, "chunks", "disable", key]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"{key}: disabled, added"
    assert main([*cli, "search", "quokkaflux", "--mode", "bm25", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["raw_hits"][0]["evidence_key"] == key and found["raw_hits"][0]["added"]
    assert found["raw_hits"][0]["status"] == "disabled" and found["raw_hits"][0]["edited"]
    index = int(key.rsplit("-", 1)[1])
    wb = make_workbench(data, local_embedder)
    try:
        assert index == max(c.chunk_index for c in wb.store.get_chunks("disk_full.md"))  # the next free index
        set_disabled(wb.store, key, False)
        assert wb.retriever.lookup("quokkaflux", search=BM25).evidence[0].evidence_key == key
        # it carries its document's labels, so a metadata filter finds it as it finds the document's own chunks
        assert wb.retriever.lookup("quokkaflux", search=BM25, scope=parse_scope(["type=md", "folder="])
                                   ).evidence[0].evidence_key == key
        with pytest.raises(RagError, match="disable it instead"):
            revert(wb.store, wb.embedder, key)
        server = live.start(create_app(wb, token="", env={}))
        try:
            answer = httpx.post(f"{server.url}/v1/documents/disk_full.md/chunks",
                                json={"text": "Zorbleplex the log volume.", "keywords": ["zorbleplex"]}, timeout=60)
            assert answer.status_code == 200, answer.text
            assert answer.json()["evidence_key"] == f"disk_full.md#chunk-{index + 1}"
            assert answer.json()["history"][-1]["who"] == "api"
            empty = httpx.post(f"{server.url}/v1/documents/disk_full.md/chunks", json={"text": " "}, timeout=60)
            assert empty.status_code == 400 and "The chunk text is empty" in empty.json()["error"]["message"]
            assert httpx.post(f"{server.url}/v1/documents/nope.md/chunks", json={"text": "x"},
                              timeout=60).status_code == 404
            listed = httpx.get(f"{server.url}/v1/documents/disk_full.md/chunks", timeout=60).json()["chunks"]
            assert [c["added"] for c in listed][-2:] == [True, True] and not listed[0]["added"]
        finally:
            server.stop()
        # re-index, an unchanged re-upload and a copy into another knowledge base keep both
        wants = {c.chunk_index: c.content for c in wb.store.get_chunks("disk_full.md")[-2:]}
        wb.ingestor.reindex(["disk_full.md"])
        wb.ingestor.ingest_paths([doc], force=True)
        again = {c.chunk_index: c for c in wb.store.get_chunks("disk_full.md")}
        assert {i: again[i].content for i in wants} == wants and all(again[i].metadata["added"] for i in wants)
        assert "Keywords: zorbleplex" in again[index + 1].content
        assert [h["what"] for h in history(wb.store, key)["history"]] == ["added", "disabled", "enabled"]
        copy = make_workbench(data, local_embedder, **{"milvus.collection": "copied"})
        try:
            copy.ingestor.reindex(source=wb.store)
            copied = {c.chunk_index: c.content for c in copy.store.get_chunks("disk_full.md")}
            assert {i: copied[i] for i in wants} == wants
            assert copy.retriever.lookup("zorbleplex", search=BM25).evidence[0].evidence_key == (
                f"disk_full.md#chunk-{index + 1}")
        finally:
            copy.close()
    finally:
        wb.close()
    # a lost database rebuilt from the kept originals (and the edits kept beside them)
    assert main(["--data-dir", str(tmp_path / "new"), "--set", "milvus.lite-mode=exclusive", "rebuild", "--from",
                 str(data), "--quiet"]) == 0
    rebuilt = make_workbench(tmp_path / "new", local_embedder)
    try:
        assert {c.chunk_index: c.content for c in rebuilt.store.get_chunks("disk_full.md")[-2:]} == wants
    finally:
        rebuilt.close()


SECTIONS = "".join(f"## Step {i}\n\n" + f"Step {i} of the runbook: check the disk and the volume {i}. " * 3 + "\n\n"
                   for i in range(4))


@pytest.mark.milvus
def test_a_changed_reupload_lists_conflicts_to_keep_or_drop_on_the_api_and_the_cli(tmp_path, local_embedder, capsys):
    from rag_core.kb.chunk_edits import add_chunk, edit_chunk

    data = tmp_path / "data"
    wb = make_workbench(data, local_embedder, **{"chunk.max-size": 200, "chunk.overlap": 0})
    try:
        wb.ingestor.ingest_uploads([("steps.md", SECTIONS.encode())])
        n = len(wb.store.get_chunks("steps.md"))
        edit_chunk(wb.store, wb.embedder, "steps.md#chunk-1", text="My own step one.")
        set_disabled(wb.store, "steps.md#chunk-2", True)
        add_chunk(wb.store, wb.embedder, "steps.md", "A step of my own: page the owner.")
        edit_chunk(wb.store, wb.embedder, "steps.md#chunk-0", keywords=["kept"])  # its base chunk stays the same
        # steps 1 and 2 reworded, and more steps: the document's own chunks now reach the added chunk's key
        changed = SECTIONS.replace("volume 1", "volume one").replace("volume 2", "volume two") + "".join(
            f"## Extra {i}\n\n" + f"Extra step {i}: look at the logs. " * 3 + "\n\n" for i in range(3))
        (report,) = wb.ingestor.ingest_uploads([("steps.md", changed.encode())])
        assert report.to_dict()["diff"]["conflicts"] == ["steps.md#chunk-1", "steps.md#chunk-2", f"steps.md#chunk-{n}"]
        chunks = {c.chunk_index: c for c in wb.store.get_chunks("steps.md")}
        assert "Keywords: kept" in chunks[0].content and "volume one" in chunks[1].content  # re-applied / not
        server = live.start(create_app(wb, token="", env={}))
        try:
            url = f"{server.url}/v1/documents/steps.md/chunks"
            listed = httpx.get(f"{url}/conflicts", timeout=60).json()["conflicts"]
            assert [(c["evidence_key"], c["kind"]) for c in listed] == [
                ("steps.md#chunk-1", "edited"), ("steps.md#chunk-2", "disabled"), (f"steps.md#chunk-{n}", "added")]
            assert "volume one" in listed[0]["now"] and listed[0]["text"] == "My own step one."
            kept = httpx.patch(f"{url}/1", json={"conflict": "keep"}, timeout=60)
            assert kept.status_code == 200, kept.text
            assert kept.json()["history"][-1]["what"] == "kept after a re-upload: re-applied"
            assert httpx.patch(f"{url}/1", json={"conflict": "keep"}, timeout=60).status_code == 400  # settled already
            assert httpx.patch(f"{url}/1", json={"conflict": "keep", "disabled": True}, timeout=60).status_code == 400
            moved = httpx.patch(f"{url}/{n}", json={"conflict": "keep"}, timeout=60).json()
        finally:
            server.stop()
        assert moved["evidence_key"] != f"steps.md#chunk-{n}" and moved["added"]
        chunks = {f"steps.md#chunk-{c.chunk_index}": c for c in wb.store.get_chunks("steps.md")}
        assert chunks["steps.md#chunk-1"].content == "My own step one."
        assert chunks[moved["evidence_key"]].content == "A step of my own: page the owner."
        assert f"steps.md#chunk-{n}" not in wb.store.edits.all()  # moved, with its history
        assert moved["history"][0]["what"] == "added"
    finally:
        wb.close()
    cli = ["--data-dir", str(data), "--set", "milvus.lite-mode=exclusive"]
    assert main([*cli, "chunks", "conflicts", "steps.md", "--json"]) == 0
    assert [c["evidence_key"] for c in json.loads(capsys.readouterr().out)["conflicts"]] == ["steps.md#chunk-2"]
    assert main([*cli, "chunks", "drop", "steps.md#chunk-2", "--json"]) == 0
    dropped = json.loads(capsys.readouterr().out)
    assert not dropped["disabled"] and dropped["history"][-1]["what"] == "dropped after a re-upload (in conflict)"
    assert main([*cli, "chunks", "conflicts", "steps.md"]) == 0
    assert capsys.readouterr().out.strip() == "steps.md: no edit in conflict"
    assert main([*cli, "chunks", "drop", "steps.md#chunk-2"]) != 0
    assert "has no edit in conflict" in capsys.readouterr().err


EDITOR = """
import sys, threading, time
sys.path.insert(0, {repo!r})
from pathlib import Path
from rag_core.kb.chunk_edits import edit_chunk
from tests.helpers import make_workbench
from tests.store.clients import FailingClient

wb = make_workbench(Path({data!r}), **{{"milvus.lite-mode": "shared", "milvus.host-idle": 30}})
def upsert(real, collection, rows, **kwargs):
    if {when!r} == "before":  # killed with the edit recorded as pending, before its row is written
        print("killing", flush=True)
        time.sleep(600)
    if {when!r} == "racing":  # killed while the upsert is on its way to the store host
        threading.Thread(target=real, args=(collection, rows), kwargs=kwargs).start()
        print("killing", flush=True)
        time.sleep(600)
    result = real(collection, rows, **kwargs)
    print("killing", flush=True)  # "after": the row is written, the edit not yet marked done
    time.sleep(600)
    return result
wb.store.client = FailingClient(wb.store.client, "upsert", upsert)
edit_chunk(wb.store, wb.embedder, "cpu_high.md#chunk-1", text="The new text of the chunk.")
"""


def settled_rows(wb, expression: str, wait_s: float = 60.0) -> list:
    """The rows matching `expression` once an upsert the killed writer had already sent is through: Milvus applies
    an upsert as a delete and an insert, and a query between the two sees neither (rag_core/store/milvus/store.py)."""
    deadline = time.monotonic() + wait_s
    while True:
        rows = wb.store.client.query(wb.store.collection, filter=expression, output_fields=["content"],
                                     consistency_level="Strong")
        if rows or time.monotonic() > deadline:
            return rows
        time.sleep(0.1)


@pytest.mark.milvus
def test_a_process_killed_during_a_chunk_edit_leaves_the_old_or_the_new_chunk_and_a_record_that_says_which(
        tmp_path, local_embedder):
    from rag_core.kb.chunk_edits import revert

    data = tmp_path / "data"
    wb = make_workbench(data, local_embedder, **{"milvus.lite-mode": "shared", "milvus.host-idle": 30})
    try:
        wb.ingestor.ingest_paths([SAMPLE_KB / "runbooks" / "cpu_high.md"])
        old = wb.store.get_chunks("cpu_high.md")[1].content
        key = "cpu_high.md#chunk-1"
        for when in ("before", "after", "racing"):
            editor = subprocess.Popen([sys.executable, "-c", EDITOR.format(repo=str(REPO), data=str(data), when=when)],
                                      cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                assert editor.stdout.readline().strip() == "killing", editor.stderr.read()[-2000:]
                assert wb.store.recover() == 0 and key in wb.store.edits.pending()  # a live writer's edit is spared
            finally:
                editor.send_signal(signal.SIGKILL)
                editor.wait(timeout=30)
            edits_file = json.loads(wb.store.edits.path.read_text(encoding="utf-8"))  # whole, parseable
            assert edits_file[key]["pending"]["content"]
            rows = settled_rows(wb, 'doc_id == "cpu_high.md" and chunk_index == 1')
            assert len(rows) == 1 and rows[0]["content"] in (old, "The new text of the chunk.")  # never neither
            wb.store.recover()  # its writer is gone: the record now says what the chunk holds
            record = wb.store.edits.all().get(key, {})  # (none: the edit was the chunk's first, and undone)
            now = wb.store.get_chunks("cpu_high.md")[1].content
            assert "pending" not in record and now == rows[0]["content"]
            assert (record.get("text") == "The new text of the chunk.") == (now != old)
            assert now == {"before": old, "after": "The new text of the chunk."}.get(when, now)
            if now != old:
                revert(wb.store, wb.embedder, key)
        assert wb.store.get_chunks("cpu_high.md")[1].content == old
    finally:
        wb.close()


@pytest.mark.milvus
def test_edits_a_reindex_killed_after_its_commit_left_unapplied_are_applied_when_the_kb_opens(tmp_path, local_embedder,
                                                                                              monkeypatch):
    from rag_core.kb import chunk_edits

    data = tmp_path / "data"
    wb = make_workbench(data, local_embedder)
    try:
        wb.ingestor.ingest_paths([SAMPLE_KB / "runbooks" / "cpu_high.md"])
        original = wb.store.get_chunks("cpu_high.md")[2].content
        chunk_edits.edit_chunk(wb.store, wb.embedder, "cpu_high.md#chunk-2", keywords=["frobz"])
        chunk_edits.add_chunk(wb.store, wb.embedder, "cpu_high.md", "An added chunk.")
        edited = {c.chunk_index: c.content for c in wb.store.get_chunks("cpu_high.md")}

        def killed(*args):
            raise KeyboardInterrupt  # the process dies between the new version's commit and the edits' re-apply

        monkeypatch.setattr(chunk_edits, "reapply", killed)
        with pytest.raises(KeyboardInterrupt):
            wb.ingestor.reindex(["cpu_high.md"])
        monkeypatch.undo()
        assert len(wb.store.get_chunks("cpu_high.md")) == len(edited) - 1  # committed, without its edits
        assert wb.store.edits.unapplied() == {"cpu_high.md"}
    finally:
        wb.close()
    wb = make_workbench(data, local_embedder)
    try:
        assert {c.chunk_index: c.content for c in wb.store.get_chunks("cpu_high.md")} == edited
        assert wb.store.edits.unapplied() == set()
        chunk_edits.reapply(wb.store, wb.embedder, ["cpu_high.md"])  # again: the same, the original kept
        assert {c.chunk_index: c.content for c in wb.store.get_chunks("cpu_high.md")} == edited
        chunk_edits.revert(wb.store, wb.embedder, "cpu_high.md#chunk-2")
        assert wb.store.get_chunks("cpu_high.md")[2].content == original
    finally:
        wb.close()


@pytest.mark.milvus
def test_keywords_and_questions_are_bounded_in_count_length_and_the_chunk_s_size(tmp_path, local_embedder, capsys):
    from rag_core.kb.chunk_edits import LIMITS, MAX_CHUNK_CHARS

    data, _, cli = ingested_by_the_cli(tmp_path, capsys)
    wb = make_workbench(data, local_embedder)
    server = live.start(create_app(wb, token="", env={}))
    try:
        chunk = f"{server.url}/v1/documents/disk_full.md/chunks"
        before = httpx.get(chunk, timeout=60).json()["chunks"]
        refused = [
            (httpx.patch(f"{chunk}/1", json={"keywords": [f"k{i}" for i in range(100_000)]}, timeout=120),
             "100000 keywords: a chunk takes at most 64."),
            (httpx.patch(f"{chunk}/1", json={"questions": ["q?"] * (LIMITS["questions"][0] + 1)}, timeout=60),
             "33 questions: a chunk takes at most 32."),
            (httpx.patch(f"{chunk}/1", json={"keywords": ["x" * 201]}, timeout=60),
             "One of the keywords has 201 characters: at most 200 each."),
            (httpx.post(chunk, json={"text": "y", "questions": ["z" * 501]}, timeout=60),
             "One of the questions has 501 characters: at most 500 each."),
            (httpx.patch(f"{chunk}/1", json={"text": "w" * 64_990, "keywords": ["more words"] * 3}, timeout=60),
             f"a chunk holds at most {MAX_CHUNK_CHARS}."),
        ]
        for answer, says in refused:
            assert answer.status_code == 400 and says in answer.json()["error"]["message"], answer.text
        assert httpx.get(chunk, timeout=60).json()["chunks"] == before  # nothing was written
        assert not wb.store.edits.all()
    finally:
        server.stop()
        wb.close()
    assert main([*cli, "chunks", "keywords", "disk_full.md#chunk-1", *[f"k{i}" for i in range(65)]]) == 2
    err = capsys.readouterr().err
    assert "65 keywords: a chunk takes at most 64." in err and len(err.strip().splitlines()) == 1

"""The Milvus store on Milvus Lite: schema, embedder check, safe filters, lock, versioned replace."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from rag_core.errors import StoreError, StoreLockedError
from rag_core.records import Document
from rag_core.store import MilvusStore
from rag_core.store.milvus import filters
from rag_core.store.milvus.registry import registry_row
from tests.helpers import REPO, make_workbench
from tests.store.clients import FailingClient

pytestmark = pytest.mark.milvus  # opens Milvus Lite in its tests: not in `make test-unit`

ODD_IDS = [
    'quote"d.md',
    "back\\slash.md",
    "it's.md",
    "中文/运维手册.md",
    "emoji 🚀 notes.md",
    'x" or id != ".md',
]


def make_doc(doc_id: str, title: str) -> Document:
    """A document built directly, bypassing the loader's doc_id normalisation (which would turn `\\`
    into `/`): the store must be safe for any string."""
    text = doc_bytes(title).decode()
    return Document(doc_id=doc_id, text=text, file_name=doc_id.rsplit("/", 1)[-1], extension="md",
                    size_bytes=len(text), content_hash=hashlib.sha256(text.encode()).hexdigest())


def doc_bytes(title: str, paragraphs: int = 3) -> bytes:
    body = "\n\n".join(f"Paragraph {i} of {title}. " + "Some steady words about operations. " * 12
                       for i in range(paragraphs))
    return f"# {title}\n\n{body}\n".encode()


@pytest.fixture
def wb(tmp_path: Path, local_embedder):
    workbench = make_workbench(tmp_path / "data", embedder=local_embedder)
    yield workbench
    workbench.close()


def versions_in_store(store: MilvusStore, doc_id: str) -> set[str]:
    rows = store.client.query(store.collection, filter=filters.equals("doc_id", doc_id),
                              output_fields=["version"], limit=10000)
    return {r["version"] for r in rows}


def test_literals_escape_quotes_and_backslashes() -> None:
    assert filters.literal('a"b\\c') == '"a\\"b\\\\c"'
    assert filters.equals("doc_id", 'x" or id != "') == 'doc_id == "x\\" or id != \\""'
    with pytest.raises(StoreError, match="Cannot filter on 'metadata'"):
        filters.equals("metadata", "x")
    with pytest.raises(StoreError, match="NUL"):
        filters.literal("a\x00b")


def test_odd_doc_ids_round_trip_and_never_widen_a_delete(wb) -> None:
    reports = wb.ingestor.ingest_documents([make_doc(name, name) for name in ODD_IDS] + [make_doc("keep.md", "k")])
    assert [r.status for r in reports] == ["added"] * (len(ODD_IDS) + 1), reports
    listed = {d.doc_id for d in wb.store.list_documents()}
    assert listed == set(ODD_IDS) | {"keep.md"}
    for doc_id in ODD_IDS:
        assert [c.doc_id for c in wb.store.get_chunks(doc_id)][:1] == [doc_id]
    # The injection-shaped id deletes exactly itself.
    assert wb.ingestor.delete('x" or id != ".md')
    assert {d.doc_id for d in wb.store.list_documents()} == (set(ODD_IDS) | {"keep.md"}) - {'x" or id != ".md'}
    assert wb.store.get_chunks("keep.md")
    # A raw value shaped like an injection used as a filter matches nothing else either.
    hits = wb.store.search_bm25("operations", 50, {"doc_id": 'keep.md" or doc_id != "'})
    assert hits == []
    for doc_id in ODD_IDS[:-1]:
        assert wb.ingestor.delete(doc_id)
    assert [d.doc_id for d in wb.store.list_documents()] == ["keep.md"]


def test_embedder_and_dimension_are_recorded(tmp_path: Path, local_embedder) -> None:
    wb = make_workbench(tmp_path, embedder=local_embedder)
    wb.ingestor.ingest_uploads([("a.md", doc_bytes("a"))])
    wb.close()

    class Other:
        name, dim = "other:model", 384

    with pytest.raises(StoreError) as err:
        make_workbench(tmp_path, embedder=Other())
    message = str(err.value)
    assert "local:use-multilingual-v3 (512-d)" in message and "other:model (384-d)" in message
    assert "reindex --from biz" in message
    # Reopening with the right embedder still works and the data is there.
    wb = make_workbench(tmp_path, embedder=local_embedder)
    assert [d.doc_id for d in wb.store.list_documents()] == ["a.md"]
    wb.close()


def test_second_process_gets_a_clear_lock_message(tmp_path: Path, local_embedder) -> None:
    wb = make_workbench(tmp_path, embedder=local_embedder)
    try:
        out = subprocess.run(
            [sys.executable, "-m", "rag_core", "--data-dir", str(tmp_path), "docs"],
            cwd=REPO, capture_output=True, text=True, timeout=120,
        )
    finally:
        wb.close()
    assert out.returncode == 2
    assert f"already open in pid {os.getpid()}" in out.stderr and "Milvus Lite allows one process" in out.stderr
    assert "Traceback" not in out.stderr
    # Closing really closes: another process can open the database now.
    again = subprocess.run([sys.executable, "-m", "rag_core", "--data-dir", str(tmp_path), "docs", "--json"],
                           cwd=REPO, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr


def test_a_foreign_holder_is_reported_too(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            from pymilvus import MilvusClient
            MilvusClient({str(tmp_path / 'milvus.db')!r})
            print("ready", flush=True)
            time.sleep(60)
        """)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        store = MilvusStore(str(tmp_path / "milvus.db"), "biz")
        with pytest.raises(StoreLockedError, match=f"(?s)already open in pid {holder.pid} .*outside this workbench"):
            store.open("local:x", 4)
        with pytest.raises(StoreLockedError):  # and again: Lite's own lock file must not have been lost
            store.open("local:x", 4)
    finally:
        holder.kill()
        holder.wait()


def test_unchanged_replaced_and_no_leftover_versions(wb) -> None:
    first = wb.ingestor.ingest_uploads([("doc.md", doc_bytes("v1", 6))])[0]
    again = wb.ingestor.ingest_uploads([("doc.md", doc_bytes("v1", 6))])[0]
    changed = wb.ingestor.ingest_uploads([("doc.md", doc_bytes("v2", 2))])[0]
    assert (first.status, again.status, changed.status) == ("added", "unchanged", "replaced")
    assert again.chunks == first.chunks
    [doc] = wb.store.list_documents()
    assert doc.chunks == changed.chunks and len(versions_in_store(wb.store, "doc.md")) == 1
    assert all("v2" in c.content or c.chunk_index > 0 for c in wb.store.get_chunks("doc.md"))


class Boom(RuntimeError):
    pass


def test_failure_while_inserting_keeps_the_old_version(wb, monkeypatch) -> None:
    wb.ingestor.ingest_uploads([("doc.md", doc_bytes("old", 4))])
    old_rows = wb.store.get_chunks("doc.md")
    monkeypatch.setattr("rag_core.store.milvus.writes.INSERT_BATCH", 1)
    calls = {"n": 0}
    real_client = wb.store.client

    def failing_insert(insert, collection, rows, **kwargs):
        if collection == wb.store.collection:  # the chunks' second batch fails
            calls["n"] += 1
            if calls["n"] == 2:
                raise Boom("disk full")
        return insert(collection, rows, **kwargs)

    monkeypatch.setattr(wb.store, "client", FailingClient(real_client, "insert", failing_insert))
    report = wb.ingestor.ingest_uploads([("doc.md", doc_bytes("new", 4))])[0]
    assert report.status == "failed" and "Boom: disk full" in report.error
    # The old version is complete and is the only one searches return; the partial one is hidden.
    assert [c.content for c in wb.store.get_chunks("doc.md")] == [c.content for c in old_rows]
    hits = wb.store.search_bm25("Paragraph", 100)
    assert {h.metadata["version"] for h in hits} == {old_rows[0].version}
    assert len(versions_in_store(wb.store, "doc.md")) == 2  # the partial rows are still there...
    monkeypatch.setattr(wb.store, "client", real_client)
    assert wb.store.recover() == 1  # ...until recovery removes them
    assert versions_in_store(wb.store, "doc.md") == {old_rows[0].version}
    assert wb.ingestor.ingest_uploads([("doc.md", doc_bytes("new", 4))])[0].status == "replaced"


def test_failure_after_commit_serves_the_new_version_and_recovers(wb, monkeypatch) -> None:
    wb.ingestor.ingest_uploads([("doc.md", doc_bytes("old", 4))])
    real_client = wb.store.client

    def failing_delete(delete, collection, **kwargs):
        if collection == wb.store.collection:  # step 4: the old version's chunks
            raise Boom("connection lost")
        return delete(collection, **kwargs)

    monkeypatch.setattr(wb.store, "client", FailingClient(real_client, "delete", failing_delete))
    assert wb.ingestor.ingest_uploads([("doc.md", doc_bytes("new", 2))])[0].status == "failed"
    monkeypatch.setattr(wb.store, "client", real_client)
    [doc] = wb.store.list_documents()
    assert {h.metadata["version"] for h in wb.store.search_bm25("Paragraph", 100)} == {doc.version}
    assert len(versions_in_store(wb.store, "doc.md")) == 2
    assert wb.store.recover() == 1
    assert versions_in_store(wb.store, "doc.md") == {doc.version}


def test_embedding_failure_writes_nothing(wb) -> None:
    wb.ingestor.ingest_uploads([("doc.md", doc_bytes("old", 4))])
    before = wb.store.get_chunks("doc.md")

    class FailingEmbedder:
        name, dim = wb.embedder.name, wb.embedder.dim

        def embed_documents(self, texts):
            from rag_core.errors import EmbeddingError

            raise EmbeddingError("The embedding service is down (HTTP 503).")

    wb.ingestor.embedder = FailingEmbedder()
    report = wb.ingestor.ingest_uploads([("doc.md", doc_bytes("new", 4))])[0]
    assert report.status == "failed" and "HTTP 503" in report.error
    assert wb.store.get_chunks("doc.md") == before
    assert len(versions_in_store(wb.store, "doc.md")) == 1


KILL_SCRIPT = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    sys.path.insert(0, {repo!r})
    from rag_core.store.milvus import writes
    from tests.helpers import make_workbench
    from tests.store.clients import FailingClient
    from tests.store.milvus.test_store import doc_bytes

    wb = make_workbench(Path({data!r}))
    writes.INSERT_BATCH = 2
    calls = 0
    def insert_then_die(insert, collection, rows, **kwargs):
        global calls
        result = insert(collection, rows, **kwargs)
        if collection == wb.store.collection:
            calls += 1
            if calls == 2:
                print("dying", flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
        return result
    wb.store.client = FailingClient(wb.store.client, "insert", insert_then_die)
    wb.ingestor.ingest_uploads([("doc.md", doc_bytes("new", 8))])
    print("survived", flush=True)
""")


def test_process_killed_mid_ingest_leaves_the_old_version_and_recovers(tmp_path: Path, local_embedder) -> None:
    data = tmp_path / "data"
    wb = make_workbench(data, embedder=local_embedder)
    wb.ingestor.ingest_uploads([("doc.md", doc_bytes("old", 5))])
    old = wb.store.get_chunks("doc.md")
    wb.close()

    out = subprocess.run([sys.executable, "-c", KILL_SCRIPT.format(repo=str(REPO), data=str(data))],
                         cwd=REPO, capture_output=True, text=True, timeout=180)
    assert out.returncode == -9 and "dying" in out.stdout and "survived" not in out.stdout, out.stderr[-2000:]

    store = MilvusStore(str(data / "milvus.db"), "biz")
    store.embedder_name, store.dim = local_embedder.name, local_embedder.dim
    store.client.load_collection(store.collection)
    store.client.load_collection(store.registry.name)
    # Before recovery: the old version is complete and is all that searches return.
    assert len(versions_in_store(store, "doc.md")) == 2
    assert [c.content for c in store.get_chunks("doc.md")] == [c.content for c in old]
    hits = store.search_dense(local_embedder.embed_query("Paragraph of old"), 100)
    assert {h.metadata["version"] for h in hits} == {old[0].version}
    store.close()
    # Opening normally runs recovery, which removes the partial version.
    wb = make_workbench(data, embedder=local_embedder)
    assert versions_in_store(wb.store, "doc.md") == {old[0].version}
    assert [d.chunks for d in wb.store.list_documents()] == [len(old)]
    wb.close()


def test_first_version_killed_before_commit_is_invisible(wb, monkeypatch) -> None:
    def failing_insert(insert, collection, rows, **kwargs):
        if collection != wb.store.collection:
            return insert(collection, rows, **kwargs)
        insert(collection, rows[:1], **kwargs)  # killed after the first chunk row
        raise Boom("killed")

    monkeypatch.setattr(wb.store, "client", FailingClient(wb.store.client, "insert", failing_insert))
    assert wb.ingestor.ingest_uploads([("fresh.md", doc_bytes("fresh", 3))])[0].status == "failed"
    assert wb.store.list_documents() == []
    assert wb.store.search_bm25("Paragraph fresh", 10) == []
    assert wb.store.recover() == 1
    assert versions_in_store(wb.store, "fresh.md") == set()


def test_vectors_must_match_chunks(wb) -> None:
    from rag_core.chunking import chunk_text
    from rag_core.loaders import load_bytes

    doc = load_bytes(doc_bytes("x"), "x.md")
    chunks = chunk_text(doc.text)
    with pytest.raises(StoreError, match="chunks but"):
        wb.store.replace_document(doc, chunks, np.zeros((len(chunks) + 1, 512), np.float32), "f")


def test_recovery_on_a_shared_server_spares_a_fresh_pending_write(wb, monkeypatch) -> None:
    """Another process may be writing right now: only old pending versions are abandoned."""
    wb.ingestor.ingest_uploads([("doc.md", doc_bytes("old", 3))])
    doc = make_doc("doc.md", "in flight")
    fresh = registry_row(doc, "fresh00000000000", "pending", committed_ns=time.time_ns())
    stale = registry_row(doc, "stale00000000000", "pending", committed_ns=time.time_ns() - 7 * 3600 * 10**9)
    wb.store.registry.insert([fresh, stale])
    monkeypatch.setattr(MilvusStore, "exclusive_access", lambda self: False)  # as on a server
    assert wb.store.recover() == 1
    states = {r["version"]: r["state"] for r in wb.store.registry.rows('doc_id == "doc.md"')}
    assert "fresh00000000000" in states and "stale00000000000" not in states
    monkeypatch.setattr(MilvusStore, "exclusive_access", lambda self: True)  # as on Lite
    assert wb.store.recover() == 1
    assert [d.doc_id for d in wb.store.list_documents()] == ["doc.md"]


def test_a_commit_between_search_and_registry_read_does_not_hide_the_document(wb, monkeypatch) -> None:
    """The race the retry in `_search` closes, made deterministic: the new version is committed (and the
    old one deleted) after the search looked at the chunks but before it read the registry."""
    wb.ingestor.ingest_uploads([("doc.md", doc_bytes("old", 3))])
    [old] = wb.store.list_documents()
    calls = {"n": 0}

    def commit_after_search(search, collection, **kwargs):
        found = search(collection, **kwargs)
        calls["n"] += 1
        if calls["n"] == 1:
            assert wb.ingestor.ingest_uploads([("doc.md", doc_bytes("new", 5))])[0].status == "replaced"
        return found

    monkeypatch.setattr(wb.store, "client", FailingClient(wb.store.client, "search", commit_after_search))
    hits = wb.store.search_bm25("Paragraph operations", 50)
    [doc] = wb.store.list_documents()
    assert hits and {h.metadata["version"] for h in hits} == {doc.version}
    assert doc.version != old.version  # the commit did come between


RACING = ('Assert "element.val >= 0"  => Invalid sparse row: negative value at '
           '/workspace/milvus-lite/thirdparty/milvus/internal/core/src/common/Utils.h:271')  # as Lite 2.5.1 says it


def refusing(error: Exception, times: int, calls: list[int]):
    """A `FailingClient` around for `search`: raises `error` the first `times` calls (each counted in `calls`)."""
    def around(search, collection, **kwargs):
        calls.append(1)
        if len(calls) <= times:
            raise error
        return search(collection, **kwargs)
    return around


@pytest.mark.parametrize(("refusals", "raised"), [(2, False), (5, True)])
def test_a_bm25_search_refused_while_a_writer_deletes_is_asked_again(wb, monkeypatch, refusals, raised) -> None:
    """Lite refuses a BM25 search whose term weights come out negative while another writer deletes rows (seen
    in the store contract's readers-during-writes test on a loaded machine): asked again, up to five times in
    all; another error is raised at once."""
    from pymilvus.exceptions import MilvusException

    wb.ingestor.ingest_uploads([("doc.md", doc_bytes("steady", 3))])
    real, calls = wb.store.client, []
    monkeypatch.setattr(wb.store, "client", FailingClient(real, "search", refusing(
        MilvusException(code=2000, message=RACING), refusals, calls)))
    if raised:
        with pytest.raises(MilvusException, match="Invalid sparse row"):
            wb.store.search_bm25("Paragraph steady", 5)
        assert len(calls) == 5
    else:
        assert wb.store.search_bm25("Paragraph steady", 5) and len(calls) == 3

    calls.clear()
    monkeypatch.setattr(wb.store, "client", FailingClient(real, "search", refusing(
        MilvusException(code=65535, message="collection not loaded"), 1, calls)))
    with pytest.raises(MilvusException, match="not loaded"):
        wb.store.search_bm25("Paragraph steady", 5)
    assert len(calls) == 1


def test_bm25_after_the_last_document_is_deleted(wb) -> None:
    from rag_core.errors import RetrievalError
    from rag_core.retrieval import SearchOptions

    wb.ingestor.ingest_uploads([("doc.md", doc_bytes("only", 2))])
    assert wb.store.search_bm25("Paragraph", 5)
    assert wb.ingestor.delete("doc.md")
    assert wb.store.search_bm25("Paragraph", 5) == []
    with pytest.raises(RetrievalError, match="The knowledge base is empty"):
        wb.retriever.lookup("Paragraph", search=SearchOptions(mode="bm25"))


def test_a_commit_between_registry_read_and_chunk_query_does_not_empty_get_chunks(wb, monkeypatch) -> None:
    """get_chunks read the active version, then a new version was committed and the old one's chunks
    deleted before it queried them: it must read the registry again, not return zero chunks."""
    wb.ingestor.ingest_uploads([("doc.md", doc_bytes("old", 3))])
    [old] = wb.store.list_documents()
    calls = {"n": 0}

    def commit_before_chunk_query(query, collection, **kwargs):
        if collection == wb.store.collection:  # get_chunks has read the registry and now queries the chunks
            calls["n"] += 1
            if calls["n"] == 1:
                assert wb.ingestor.ingest_uploads([("doc.md", doc_bytes("new", 5))])[0].status == "replaced"
        return query(collection, **kwargs)

    monkeypatch.setattr(wb.store, "client", FailingClient(wb.store.client, "query", commit_before_chunk_query))
    chunks = wb.store.get_chunks("doc.md")
    [doc] = wb.store.list_documents()
    assert chunks and {c.version for c in chunks} == {doc.version} and len(chunks) == doc.chunks
    assert doc.version != old.version  # the commit did come between

"""One registry view per lookup, remembered for a second (store.milvus.versions): the searches stay exactly as
correct under concurrent re-indexing as with a registry read per channel, and make fewer reads.

Two MilvusStore objects on one Milvus Lite file stand for two processes: each remembers on its own, and one
does not hear of the other's writes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rag_core.records import SearchOptions
from rag_core.retrieval import StoreSearchPort
from rag_core.store import MilvusStore
from rag_core.store.milvus.versions import ActiveVersions
from tests.contracts.store import DIM, EMBEDDER, new_version, text_of, vector
from tests.store.clients import FailingClient


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class VectorOfText:
    """The contract's synthetic vectors as an Embedder: a chunk's own text finds it first."""

    name, dim = EMBEDDER, DIM

    def embed_query(self, text: str) -> np.ndarray:
        return vector(text)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return np.stack([vector(t) for t in texts])


@pytest.fixture(scope="module")
def folder(tmp_path_factory, milvus) -> Path:
    return Path(tmp_path_factory.mktemp("versions"))


@pytest.fixture
def stores(folder: Path, request):
    """A reader and a writer (another process, as far as the reader's memory goes), on a fresh collection."""
    name = f"v_{request.node.name[:40].replace('[', '_').replace(']', '_').replace('-', '_')}"
    reader, writer = (MilvusStore(str(folder / "milvus.db"), name) for _ in range(2))
    reader.open(EMBEDDER, DIM)
    writer.open(EMBEDDER, DIM)
    yield reader, writer
    writer.drop()
    writer.close()
    reader.close()


def count_registry_reads(store: MilvusStore, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    reads: list[int] = []
    real = store.registry.active_versions

    def counted(doc_ids):
        reads.append(1)
        return real(doc_ids)

    monkeypatch.setattr(store.registry, "active_versions", counted)
    return reads


# ---------------------------------------------------------------------------------------- the memory itself
def test_remembered_versions_expire_and_reads_that_predate_a_write_are_not_remembered() -> None:
    clock = Clock()
    memory = ActiveVersions(ttl_s=1.0, clock=clock)
    token = memory.begin_read()
    memory.remember(token, ["a", "b", "gone"], {"a": "v1", "b": "v7"})
    assert memory.recall(["a", "b"]) == {"a": "v1", "b": "v7"}
    assert memory.recall(["a", "gone"]) is None  # not active when read: never remembered
    assert memory.recall([]) == {}
    clock.now += 1.01
    assert memory.recall(["a"]) is None  # expired

    token = memory.begin_read()  # a read begins ...
    memory.forget(["a"])  # ... this process writes `a` meanwhile ...
    memory.remember(token, ["a", "b"], {"a": "v1", "b": "v7"})  # ... so what the read found is not kept
    assert memory.recall(["b"]) is None
    memory.remember(memory.begin_read(), ["a"], {"a": "v2"})
    assert memory.recall(["a"]) == {"a": "v2"}
    memory.forget()
    assert memory.recall(["a"]) is None


# ---------------------------------------------------------------------------------------- on Milvus Lite
def test_a_hybrid_lookup_reads_the_registry_once_and_then_not_until_its_view_expires(stores, monkeypatch) -> None:
    reader, writer = stores
    clock = Clock()
    reader.registry.versions = ActiveVersions(clock=clock)
    writer.replace_documents([new_version("a.md", text_of("alpha")), new_version("b.md", text_of("beta"))])
    reads = count_registry_reads(reader, monkeypatch)
    first = reader.search_both(vector("x"), "alpha beta paragraph", 10)
    assert len(reads) == 1 and first[0] and first[1]  # one read judged both channels (before: one per channel)
    assert reader.search_both(vector("x"), "alpha beta paragraph", 10) == first
    assert (
        reader.search_dense(vector("x"), 10) == first[0] and reader.search_bm25("alpha beta paragraph", 10) == first[1]
    )
    assert len(reads) == 1  # every hit agreed with the remembered view: no read
    clock.now += 1.5
    assert reader.search_both(vector("x"), "alpha beta paragraph", 10) == first
    assert len(reads) == 2


def test_another_process_re_indexing_is_seen_at_once_despite_a_remembered_view(stores) -> None:
    reader, writer = stores
    writer.replace_documents([new_version("doc.md", text_of("steady", 4), "fp-old")])
    [old] = {h.metadata["version"] for h in reader.search_bm25("steady paragraph", 50)}  # now remembered
    [new] = writer.replace_documents([new_version("doc.md", text_of("steady", 2), "fp-new")])
    # The reader's memory still says `old`, but the hits carry `new`: it reads the registry again.
    dense, bm25 = reader.search_both(vector("steady"), "steady paragraph", 50)
    assert {h.metadata["version"] for h in dense + bm25} == {new.version} != {old}
    assert len(bm25) == len(reader.get_chunks("doc.md"))
    writer.delete_document("doc.md")
    assert reader.search_both(vector("steady"), "steady paragraph", 50) == ([], [])


def test_a_commit_between_the_registry_read_and_the_second_channel_does_not_mix_versions(stores, monkeypatch) -> None:
    """The race one registry view per lookup closes, made deterministic: another process commits a new version
    (and deletes the old one's chunks) right after the lookup read the registry. With a read per channel, the
    dense list kept the old version and the BM25 list, searched after the commit, the new one."""
    reader, writer = stores
    writer.replace_documents([new_version("doc.md", text_of("oldtopic", 3))])
    real = reader.registry.active_versions
    calls: list[int] = []

    def commit_after_read(doc_ids):
        active = real(doc_ids)
        calls.append(1)
        if len(calls) == 1:
            writer.replace_documents([new_version("doc.md", text_of("newtopic", 3))])
        return active

    monkeypatch.setattr(reader.registry, "active_versions", commit_after_read)
    port = StoreSearchPort(reader, VectorOfText(), SearchOptions(mode="hybrid"))
    hits = port.search("oldtopic newtopic paragraph", 50).hits
    [doc] = writer.list_documents()
    assert hits and len({h.metadata["version"] for h in hits}) == 1
    assert {h.metadata["version"] for h in port.search("oldtopic newtopic paragraph", 50).hits} == {doc.version}


def test_a_writer_that_died_after_its_commit_shows_its_previous_version_at_most_until_the_view_expires(
        stores, monkeypatch) -> None:
    """The one case a remembered view can be behind: a writer committed a new version and died before deleting
    the old one's chunks (recovery removes them later). Until the view expires a lookup may still show the
    previous version, whole and alone; after that, only what the registry calls active."""
    reader, writer = stores
    clock = Clock()
    reader.registry.versions = ActiveVersions(clock=clock)
    first = new_version("doc.md", text_of("alpha", 3), "fp-old")
    writer.replace_documents([first])
    [old] = {h.metadata["version"] for h in reader.search_bm25("alpha", 50)}

    def killed(delete, collection, **kwargs):
        if collection == writer.collection:
            raise RuntimeError("killed before deleting the old version")
        return delete(collection, **kwargs)

    monkeypatch.setattr(writer, "client", FailingClient(writer.client, "delete", killed))
    with pytest.raises(RuntimeError):
        writer.replace_documents([new_version("doc.md", text_of("beta", 3), "fp-new")])
    monkeypatch.undo()
    [doc] = writer.list_documents()
    assert doc.version != old  # committed

    # `alpha` only matches the old version's chunks, which are still there
    stale = reader.search_bm25("alpha", 50)
    assert stale and {h.metadata["version"] for h in stale} == {old}
    whole = {c.chunk_index for c in first.chunks if "alpha" in c.text}
    assert {h.metadata["chunk_index"] for h in stale} == whole and len(stale) == len(whole) > 1
    clock.now += 1.01
    assert reader.search_bm25("alpha", 50) == []
    assert {h.metadata["version"] for h in reader.search_bm25("beta", 50)} == {doc.version}

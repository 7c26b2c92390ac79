"""The test suite's vector folder (rag_core.embedding.local.TEST_CACHE_ENV): a text seen before is read back, the
others are embedded together and kept; a damaged file is embedded again."""

from __future__ import annotations

import numpy as np

from rag_core.embedding.local import TEST_CACHE_ENV


def test_seen_texts_are_read_back_and_only_new_ones_embedded(local_embedder, monkeypatch, tmp_path) -> None:
    real = local_embedder.embed_documents(["disk full", "磁盘已满", "cpu high"])
    monkeypatch.setenv(TEST_CACHE_ENV, str(tmp_path))
    encoded: list[list[str]] = []
    model = local_embedder._model.get()
    monkeypatch.setattr(model, "encode", lambda texts, _encode=model.encode: encoded.append(texts) or _encode(texts))

    first = local_embedder.embed_documents(["disk full", "磁盘已满"])
    assert encoded == [["disk full", "磁盘已满"]] and len(list(tmp_path.iterdir())) == 2
    np.testing.assert_allclose(first, real[:2], atol=1e-5)

    again = local_embedder.embed_documents(["cpu high", "disk full", "磁盘已满"])
    assert encoded[1:] == [["cpu high"]]  # only the new text
    assert np.array_equal(again[1:], first) and np.allclose(again[0], real[2], atol=1e-5)

    local_embedder.embed_query("disk full")  # a query is kept apart from a document of the same text
    assert encoded[2:] == [["disk full"]]

    for path in tmp_path.iterdir():
        path.write_bytes(b"\0" * 7)  # not a vector: embedded again
    assert np.array_equal(local_embedder.embed_documents(["cpu high"]), again[:1]) and encoded[3:] == [["cpu high"]]

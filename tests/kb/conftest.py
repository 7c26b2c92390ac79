"""Fixtures of the knowledge-base tests: a data dir per test (Milvus Lite) and the real local embedder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rag_core.config import Settings, load_settings


class CountingEmbedder:
    """The real embedder, counting the texts it embeds for documents (a migration must embed none)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.document_texts = 0

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        self.document_texts += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


@pytest.fixture
def counting(local_embedder) -> CountingEmbedder:
    return CountingEmbedder(local_embedder)


def settings_for(data: Path, **overrides: Any) -> Settings:
    """Settings of a test's data dir, opened by this process alone (no store host) unless `milvus.lite-mode`
    says otherwise."""
    overrides = {"milvus.lite-mode": "exclusive", **overrides}
    return load_settings(data_dir=data, env={}, config_file=None, overrides=overrides)

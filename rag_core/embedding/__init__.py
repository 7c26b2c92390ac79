"""The Embedder port. Adapters live one per module; only `rag_core.bootstrap` builds them."""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of a fixed size.

    `name` ("provider:model") and `dim` are recorded with the collection, so an index is never
    searched with vectors from another model.
    """

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32 for texts that will be stored."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """(dim,) float32 for a search query."""
        ...

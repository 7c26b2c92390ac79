"""Every port of the workbench, in one place: the `typing.Protocol`s that adapters implement.

An adapter is correct when it passes its port's contract-test mixin in `tests/contracts/` (as in
haystack's `testing/`): every adapter and an in-memory fake run the same mixin. Only `bootstrap.py`
builds real adapters; everything else depends on these Protocols.
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

from .records import RerankResult, SearchOptions, SearchResult


# ---------------------------------------------------------------------------------------- embedding
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


# ---------------------------------------------------------------------------------------- search
@runtime_checkable
class KnowledgeSearchPort(Protocol):
    """Finds candidate chunks for a query (the `fetch` half of the one lookup path).

    Contract (tests/contracts/search_port.py): `search` returns at most `k` hits, best first, scores
    higher-is-better, each hit's `channels` giving its 1-based rank and raw score in every channel that
    found it; `filters` (e.g. {"doc_id": "a.md"}) restrict the hits exactly; an empty knowledge base is
    a RetrievalError, not an empty result. `configured` returns a port searching with other options
    (itself when they are the same) and never changes the port it is called on.
    """

    def configured(self, options: SearchOptions) -> KnowledgeSearchPort: ...

    def search(self, query: str, k: int, filters: Mapping[str, Any] | None = None) -> SearchResult: ...


# ---------------------------------------------------------------------------------------- store
# (the chunk store's Protocol goes here)


# ---------------------------------------------------------------------------------------- rerank
@runtime_checkable
class Reranker(Protocol):
    """Scores documents for a query with a cross-encoder-style model (the stage between fetch and
    post-processing). `name` is "provider:model"."""

    @property
    def name(self) -> str: ...

    def rerank(self, query: str, documents: Sequence[str]) -> RerankResult:
        """One score per document, in input order (an empty list gives no scores)."""
        ...


# ---------------------------------------------------------------------------------------- remote clients
# (chat model, logs and metrics clients go here)

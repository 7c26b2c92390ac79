"""The base of the remote embedders (DashScope, OpenAI-compatible): `BatchEmbedder`'s checks and
batching plus `RemoteAdapter`'s deadlines, retries and messages. A provider implements `_request_batch`:
one plain request for one batch, returning its vectors or raising what its SDK raises."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import numpy as np

from ..errors import EmbeddingError, RemoteError
from ..remote import Endpoint, RemoteAdapter
from .base import BatchEmbedder, Role


class EmbeddingServiceError(EmbeddingError, RemoteError):
    """The embedding service failed or answered something unusable; `kind` says how (see RemoteError)."""

    upstream = "embedder"


class RemoteEmbedder(BatchEmbedder, RemoteAdapter):
    _span_kind = "EMBEDDING"  # rag_core.tracing.semconv.EMBEDDING
    def __init__(self, endpoint: Endpoint, *, batch_size: int, timeout: float, max_retries: int, secret: str,
                 **adapter: Any) -> None:
        if batch_size < 1:
            raise EmbeddingServiceError(f"embedding.batch-size must be at least 1, got {batch_size}.", "config")
        RemoteAdapter.__init__(self, endpoint, timeout=timeout, max_retries=max_retries, secret=secret, **adapter)
        self.batch_size = batch_size

    @abstractmethod
    def _request_batch(self, batch: list[str], role: Role) -> np.ndarray:
        """One request: the vectors of `batch`, in order."""

    def _embed_batch(self, batch: list[str], role: Role) -> np.ndarray:
        return self._call(lambda: self._request_batch(batch, role))


def texts(n: int) -> str:
    return f"{n} text" if n == 1 else f"{n} texts"


def endpoint(subject: str, *, model: str, key_env: str, has_key: bool, url_hint: str,
             **extra: Any) -> Endpoint:
    """The embedding services' `Endpoint`: settings under `embedding.`, errors as EmbeddingServiceError."""
    return Endpoint(subject, "embedding", EmbeddingServiceError, path="embeddings", model=model, key_env=key_env,
                    has_key=has_key, url_hint=url_hint,
                    bad_request_hint=" Check embedding.model and embedding.dimension.", **extra)


"""What every embedder does the same way, written once: input checks, the empty list, batching, the
shape and dtype of the answer, and loading a local model once even when two sessions ask at the same time.

The contract (tests/contracts/embedder.py runs it on every adapter):
- `embed_documents` takes a sequence of strings; one `str` is refused with `TypeError` (it would
  otherwise be embedded character by character), and so is an item that is not a `str`;
- an empty or blank text is refused with `EmbeddingError` naming the item: it means nothing to embed,
  remote APIs reject it, and a stored placeholder vector would only produce junk hits (chunking never
  yields one, so it points at a caller's bug or an empty query);
- `[]` gives a (0, dim) array without loading a model or calling a service;
- vectors come back float32, C-contiguous, one row per text in input order.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Generic, Literal, TypeVar

import numpy as np

from ..errors import EmbeddingError

Role = Literal["document", "query"]
M = TypeVar("M")


def check_texts(texts: Sequence[str]) -> list[str]:
    """The texts as a list, or TypeError / EmbeddingError saying what is wrong."""
    if isinstance(texts, (str, bytes)):
        raise TypeError("embed_documents takes a sequence of texts, not one string")
    items = list(texts)
    for i, text in enumerate(items):
        where = "" if len(items) == 1 else f" (item {i + 1} of {len(items)})"
        if not isinstance(text, str):
            raise TypeError(f"Texts to embed must be str, got {type(text).__name__}{where}.")
        if not text.strip():
            raise EmbeddingError(f"Cannot embed an empty text{where}.")
    return items


def check_query(text: str) -> str:
    if not isinstance(text, str):
        raise TypeError(f"A query to embed must be str, got {type(text).__name__}.")
    if not text.strip():
        raise EmbeddingError("Cannot embed an empty query.")
    return text


class BatchEmbedder(ABC):
    """`embed_documents` and `embed_query` for adapters that implement `_embed_batch`.

    `batch_size`: texts per `_embed_batch` call (None: all at once).
    """

    name: str
    batch_size: int | None = None

    @property
    @abstractmethod
    def dim(self) -> int: ...

    @abstractmethod
    def _embed_batch(self, batch: list[str], role: Role) -> np.ndarray:
        """(len(batch), dim) vectors for a non-empty batch of checked texts."""

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        items = check_texts(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._embed(items, "document")

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([check_query(text)], "query")[0]

    def _embed(self, items: list[str], role: Role) -> np.ndarray:
        size = self.batch_size or len(items)
        parts = [np.asarray(self._embed_batch(items[i:i + size], role), dtype=np.float32)
                 for i in range(0, len(items), size)]
        out = np.ascontiguousarray(np.vstack(parts), dtype=np.float32)
        if out.shape != (len(items), self.dim):
            raise EmbeddingError(f"{self.name} returned vectors of shape {out.shape} for {len(items)} "
                                 f"text(s); expected ({len(items)}, {self.dim}).")
        return out


class LazyModel(Generic[M]):
    """A model loaded on first use, exactly once: Streamlit sessions share one cached embedder and two
    of them may ask for it at the same moment."""

    def __init__(self, load: Callable[[], M]) -> None:
        self._load = load
        self._model: M | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def get(self) -> M:
        model = self._model
        if model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._load()
                model = self._model
        return model

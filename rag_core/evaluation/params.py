"""Sweep parameters: their names, the settings they default to, and the one parser for the
comma-separated lists people type (the `eval` command's options and the Evaluation page's fields)."""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

from ..errors import EvaluationError

INDEX_KEYS = ("chunk_size", "overlap")
SEARCH_KEYS = ("mode", "fusion", "rrf_k", "dense_weight", "bm25_weight", "retrieve_k")
POST_KEYS = ("return_n", "max_chunks_per_document")
PARAM_KEYS = INDEX_KEYS + SEARCH_KEYS + POST_KEYS
# The setting each parameter defaults to (its help text is the parameter's help).
PARAM_SETTINGS = {"chunk_size": "chunk.max-size", "overlap": "chunk.overlap", "mode": "rag.search-mode",
                  "fusion": "rag.fusion", "rrf_k": "rag.rrf-k", "dense_weight": "rag.dense-weight",
                  "bm25_weight": "rag.bm25-weight", "retrieve_k": "rag.retrieve-k", "return_n": "rag.return-n",
                  "max_chunks_per_document": "rag.max-chunks-per-document"}
LABELS = {"chunk_size": "chunk size", "overlap": "overlap", "mode": "search mode", "fusion": "fusion",
          "rrf_k": "RRF k", "dense_weight": "dense weight", "bm25_weight": "BM25 weight", "retrieve_k": "retrieve-k",
          "return_n": "return-n", "max_chunks_per_document": "max chunks per document"}


def parse_values(text: str, kind: Callable[[str], Any], name: str,
                 choices: Sequence[str] | None = None) -> list[Any]:
    """"20, 50" -> [20, 50]. Raises EvaluationError naming `name` and the bad part."""
    values = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        try:
            value = kind(part)
        except ValueError:
            raise EvaluationError(f"{name}: {part!r} is not a valid {getattr(kind, '__name__', 'value')}; "
                                  "give one value or a comma-separated list.") from None
        if isinstance(value, float) and not math.isfinite(value):
            raise EvaluationError(f"{name}: {part!r} is not a finite number.")
        if choices and value not in choices:
            raise EvaluationError(f"{name}: {part!r} is not one of {', '.join(choices)}.")
        values.append(value)
    if not values:
        raise EvaluationError(f"{name}: give at least one value.")
    return values

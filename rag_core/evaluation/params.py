"""Sweep parameters: their names, the settings they default to, and the one parser for the
comma-separated lists people type (the `eval` command's options and the Evaluation page's fields)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import EvaluationError

INDEX_KEYS = ("chunk_size", "overlap")
SEARCH_KEYS = ("mode", "fusion", "rrf_k", "dense_weight", "bm25_weight", "retrieve_k")
RERANK_KEYS = ("rerank",)  # the rerank stage runs inside a fetch: a point per reranker fetches on its own
FETCH_KEYS = SEARCH_KEYS + RERANK_KEYS
POST_KEYS = ("return_n", "max_chunks_per_document")
# The expansion and merge stages and the projection run in the "assemble" phase: a point per value re-assembles the
# fetched hits, it never searches again.
CONTEXT_KEYS = ("expand", "expand_neighbours", "block_tokens", "context_tokens")
ASSEMBLE_KEYS = POST_KEYS + CONTEXT_KEYS
PARAM_KEYS = INDEX_KEYS + FETCH_KEYS + ASSEMBLE_KEYS
# `--rerank configured`: the provider the settings name (rerank.provider, with its model and base URL).
CONFIGURED = "configured"
# The setting each parameter defaults to (its help text is the parameter's help).
PARAM_SETTINGS = {"chunk_size": "chunk.max-size", "overlap": "chunk.overlap", "mode": "rag.search-mode",
                  "fusion": "rag.fusion", "rrf_k": "rag.rrf-k", "dense_weight": "rag.dense-weight",
                  "bm25_weight": "rag.bm25-weight", "retrieve_k": "rag.retrieve-k", "rerank": "rerank.provider",
                  "return_n": "rag.return-n",
                  "max_chunks_per_document": "rag.max-chunks-per-document", "expand": "rag.expand",
                  "expand_neighbours": "rag.expand-neighbours", "block_tokens": "rag.block-tokens",
                  "context_tokens": "rag.context-tokens"}
LABELS = {"chunk_size": "chunk size", "overlap": "overlap", "mode": "search mode", "fusion": "fusion",
          "rrf_k": "RRF k", "dense_weight": "dense weight", "bm25_weight": "BM25 weight", "retrieve_k": "retrieve-k",
          "rerank": "reranker",
          "return_n": "return-n", "max_chunks_per_document": "max chunks per document", "expand": "expand",
          "expand_neighbours": "expand neighbours", "block_tokens": "block tokens", "context_tokens": "context tokens"}


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


def choices_of(name: str) -> tuple[str, ...]:
    """The values a choice parameter takes (the setting's choices; the reranker also `configured`)."""
    from ..config import KEYS

    choices = tuple(KEYS[PARAM_SETTINGS[name]].choices or ())
    return choices + (CONFIGURED,) if name == "rerank" else choices


def parse_kb_names(text: str | Sequence[str]) -> list[str]:
    """"small, wide" (or a list) -> ["small", "wide"], unique, in the order given; each must be a valid knowledge
    base name (whether it exists is the catalog's to say). Raises EvaluationError naming the bad one."""
    from ..names import name_problem

    parts = text.split(",") if isinstance(text, str) else list(text)
    names = list(dict.fromkeys(p.strip() for p in parts if p.strip()))
    if not names:
        raise EvaluationError("knowledge bases: give at least one name (`kb list` shows them).")
    for name in names:
        if problem := name_problem(name):
            raise EvaluationError(f"knowledge bases: {problem}")
    return names

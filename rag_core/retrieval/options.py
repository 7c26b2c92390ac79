"""Lookup options given by a person (CLI flags, HTTP query parameters, the debugger's controls) turned into
`KnowledgeRetriever.lookup(...)` keyword arguments: one implementation, so every entry point answers alike."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..config import Settings
from .scope import parse_scope

# option name -> the setting whose rules (choices, range, finite) check it
SEARCH_OPTIONS = {"mode": "rag.search-mode", "fusion": "rag.fusion", "rrf_k": "rag.rrf-k",
                  "dense_weight": "rag.dense-weight", "bm25_weight": "rag.bm25-weight",
                  "cross_language": "rag.cross-language"}
WIDTH_OPTIONS = {"retrieve_k": "rag.retrieve-k", "return_n": "rag.return-n",
                 "max_chunks_per_document": "rag.max-chunks-per-document"}


def lookup_overrides(options: Mapping[str, Any], settings: Settings, *, no_rerank: bool = False) -> dict[str, Any]:
    """`options`: values by option name (missing or None = the configured default). They reach the lookup as the
    debugger's sliders do; everything else (projection budgets) stays as configured, so `search --json` is what
    the debugger shows. Values are checked by the rules of the setting each option overrides before anything
    runs. `no_rerank`: skip the configured reranker for this lookup."""
    from . import params_from_settings

    given = {key: options[name] for name, key in {**SEARCH_OPTIONS, **WIDTH_OPTIONS}.items()
             if options.get(name) is not None}
    mode = given.get("rag.search-mode") or settings["rag.search-mode"]
    if options.get("score_threshold") is not None:  # the threshold of the mode this lookup searches in
        given[f"rag.score-threshold.{mode}"] = options["score_threshold"]
    params = params_from_settings(settings.with_overrides(given, "search options"))
    return {**{name: options.get(name) for name in WIDTH_OPTIONS}, "search": params.search,
            "rerank": replace(params.rerank, enabled=False) if no_rerank else None,
            "score_threshold": params.score_threshold if options.get("score_threshold") is not None else None,
            "scope": parse_scope(options.get("filter")) if options.get("filter") else None}

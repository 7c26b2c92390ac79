"""The lookup options people give: the retrieval debugger's knobs as `search`/`explain` options and as HTTP
query parameters. One builder for every entry point, so `search --json`, `/v1/search` and the debugger agree.

Each option is the setting it overrides for one lookup, so its value is checked by that setting's own rules
(choices, range, finite); options not given keep the knowledge base's defaults.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..config import Settings

SEARCH_OPTIONS = {"mode": "rag.search-mode", "fusion": "rag.fusion", "rrf_k": "rag.rrf-k",
                  "dense_weight": "rag.dense-weight", "bm25_weight": "rag.bm25-weight"}
WIDTH_OPTIONS = {"retrieve_k": "rag.retrieve-k", "return_n": "rag.return-n",
                 "max_chunks_per_document": "rag.max-chunks-per-document"}
OPTIONS = {**SEARCH_OPTIONS, **WIDTH_OPTIONS}


def lookup_overrides(settings: Settings, *, no_rerank: bool = False, **given: Any) -> dict[str, Any]:
    """`lookup(...)` keyword arguments for the options given (`mode="bm25"`, `retrieve_k=30`, ...; None = not
    given), over `settings` (the knowledge base's). Everything else (projection budgets) stays as configured,
    so what a caller gets is what the debugger shows. Raises ConfigError for a bad value, naming its setting."""
    from .retriever import params_from_settings

    unknown = set(given) - set(OPTIONS)
    if unknown:
        raise TypeError(f"unknown lookup options: {', '.join(sorted(unknown))}")
    chosen = {OPTIONS[name]: value for name, value in given.items() if value is not None}
    params = params_from_settings(settings.with_overrides(chosen, "search options"))
    return {**{name: given.get(name) for name in WIDTH_OPTIONS}, "search": params.search,
            "rerank": replace(params.rerank, enabled=False) if no_rerank else None}

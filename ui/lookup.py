"""The debugger's lookup with a per-session cache of fetched hits.

`KnowledgeRetriever.fetch` (the search port: embedding + Milvus) is the expensive half; `assemble`
(identity, dedup, caps, return-n, projection) is pure and fast. The fetched hits are cached under
everything that decides them — the query, retrieve-k, the search options, filters and rerank settings —
so moving the return-n or per-document-cap slider runs `assemble` only (no search, no reranker call).
"""

from __future__ import annotations

from typing import Any, Hashable, Mapping, MutableMapping
from urllib.parse import urlencode

from rag_core.retrieval import Fetched, KnowledgeRetriever, LookupParams, LookupResult

CACHE_SIZE = 8
DEBUGGER_PAGE = "pages/debugger.py"
DEBUGGER_URL_PATH = "debugger"


def fetch_key(query: str, params: LookupParams) -> Hashable:
    filters = tuple(sorted(params.filters.items())) if params.filters else None
    return (query.strip(), params.retrieve_k, params.search, filters, params.rerank)


def cached_lookup(retriever: KnowledgeRetriever, query: str, params: LookupParams,
                  cache: MutableMapping[Hashable, Fetched]) -> tuple[LookupResult, bool]:
    """(result, True when the hits came from the cache). `cache` is a dict kept in session state;
    it holds the last CACHE_SIZE fetches, most recent last."""
    key = fetch_key(query, params)
    fetched = cache.pop(key, None)
    hit = fetched is not None
    if fetched is None:
        fetched = retriever.fetch(query, params)
    cache[key] = fetched  # re-inserted: most recent last
    while len(cache) > CACHE_SIZE:
        cache.pop(next(iter(cache)))
    return retriever.assemble(fetched, params), hit


def debugger_query_params(query: str, params: LookupParams | Mapping[str, Any] | None = None) -> dict[str, str]:
    """Query parameters that open the retrieval debugger pre-filled with this lookup
    (`st.page_link(DEBUGGER_PAGE, query_params=...)`, or `?` + urlencode for a plain link)."""
    out = {"q": query}
    if params is None:
        return out
    if isinstance(params, LookupParams):
        params = params.to_dict()
    for name in ("retrieve_k", "return_n", "max_chunks_per_document"):
        if params.get(name) is not None:
            out[name] = str(params[name])
    mode = params.get("search_mode") or params.get("mode")
    if mode:
        out["mode"] = str(mode)
    return out


def debugger_url(query: str, params: LookupParams | Mapping[str, Any] | None = None) -> str:
    """A relative URL to the debugger for this lookup, e.g. for a markdown link."""
    return f"{DEBUGGER_URL_PATH}?{urlencode(debugger_query_params(query, params))}"

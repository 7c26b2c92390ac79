"""Retrieval: identity, post-processing, projection, the rerank stage and the one lookup path; the
"why wasn't it retrieved?" explanation is `rag_core.retrieval.explain`."""

from ..records import SearchOptions, SearchResult
from .params import LookupParams, params_from_settings
from .ports import KnowledgeSearchPort, StoreSearchPort
from .projection import Budgets
from .rerank import RerankParams
from .retriever import Fetched, KnowledgeRetriever, LookupResult

__all__ = ["Budgets", "Fetched", "KnowledgeRetriever", "KnowledgeSearchPort", "LookupParams", "LookupResult",
           "RerankParams", "SearchOptions", "SearchResult", "StoreSearchPort", "params_from_settings"]

"""Retrieval: identity, post-processing, projection and the one lookup path."""

from ..records import SearchOptions, SearchResult
from .ports import KnowledgeSearchPort, MilvusSearchPort
from .projection import Budgets
from .retriever import Fetched, KnowledgeRetriever, LookupParams, LookupResult, params_from_settings

__all__ = ["Budgets", "Fetched", "KnowledgeRetriever", "KnowledgeSearchPort", "LookupParams", "LookupResult",
           "MilvusSearchPort", "SearchOptions", "SearchResult", "params_from_settings"]

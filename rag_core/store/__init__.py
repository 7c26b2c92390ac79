"""Milvus store adapters (Milvus Lite embedded, or a server by URI)."""

from .milvus import MilvusStore, WriteResult

__all__ = ["MilvusStore", "WriteResult"]

"""Embedding adapters, one per module; only `rag_core.bootstrap` builds them. The port is
`rag_core.ports.Embedder` (re-exported here)."""

from ..ports import Embedder

__all__ = ["Embedder"]

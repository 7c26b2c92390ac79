"""Rerankers: a cross-encoder scores each (query, candidate) pair between recall and post-processing.
The port is `rag_core.ports.Reranker` (re-exported here); adapters: DashScope (`dashscope`),
OpenAI-compatible `/rerank` (`openai_compat`: vLLM, Xinference, Jina, ...), text-embeddings-inference
(`tei`). Only `rag_core.bootstrap.build_reranker` builds them."""

from ..ports import Reranker

__all__ = ["Reranker"]

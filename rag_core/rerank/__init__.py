"""Rerankers: a cross-encoder scores each (query, candidate) pair between recall and post-processing.
The port is `rag_core.ports.Reranker`; adapters: DashScope (`dashscope`), OpenAI-compatible `/rerank`
(`openai_compat`: vLLM, Xinference, Jina, ...), text-embeddings-inference (`tei`), registered in
`providers.RERANKERS` (the choices of `rerank.provider` and the factory of each). Only
`rag_core.bootstrap.build_reranker` builds them.

This package's `__init__` imports nothing: `config` reads the registry, and importing the port here would make
every setting depend on it (and on what the port imports)."""

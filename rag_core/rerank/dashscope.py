"""DashScope's text rerank (`gte-rerank-v2` by default) through `dashscope.TextReRank`.

Its documented limits are respected here, and the notes of the result say what that took: at most 500
documents and 30,000 tokens per request (more are sent in several requests; scores of one (query,
document) pair do not depend on the others, so they compare across requests), 4,000 tokens per document
and for the query (longer ones are truncated). Tokens are estimated conservatively (`estimate_tokens`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..config import Settings, redact_uri
from ..embedding.dashscope import DEFAULT_BASE_URL, raise_for_answer
from ..errors import ConfigError, RerankError
from ..registry import DEFAULT_KEY_ENV, secret
from ..remote import Endpoint
from .base import RemoteReranker, scores_by_index

DEFAULT_MODEL = "gte-rerank-v2"


class DashScopeReranker(RemoteReranker):
    max_documents = 500
    max_document_tokens = 4000
    max_request_tokens = 30000
    limits_name = "DashScope's"
    limits_code = "rerank.service.dashscope"

    def __init__(self, api_key: str, model: str = DEFAULT_MODEL, base_url: str | None = None, *,
                 timeout: float = 5.0, max_retries: int = 1, api_key_env: str = "DASHSCOPE_API_KEY",
                 **adapter: Any) -> None:
        if not api_key:
            raise RerankError(f"The DashScope reranker needs an API key: set {api_key_env}.", "config")
        self._api_key = api_key
        self._model = model or DEFAULT_MODEL
        self._base_url = base_url.rstrip("/") if base_url else None  # None: the SDK's default endpoint
        where = redact_uri(self._base_url or DEFAULT_BASE_URL)
        endpoint = Endpoint(f"The DashScope reranker at {where}", "rerank", RerankError, path="rerank",
                            model=self._model, key_env=api_key_env, has_key=True,
                            url_hint=" (it should end in /api/v1)", bad_request_hint=" Check rerank.model.")
        super().__init__(endpoint, f"dashscope:{self._model}", timeout=timeout, max_retries=max_retries,
                         secret=api_key, **adapter)

    def __repr__(self) -> str:  # never shows the key
        return f"DashScopeReranker(model={self._model!r}, base_url={self._base_url!r})"

    def _score_batch(self, query: str, documents: list[str]) -> list[float]:
        import dashscope

        resp = dashscope.TextReRank.call(model=self._model, query=query, documents=documents, top_n=len(documents),
                                         return_documents=False, api_key=self._api_key,
                                         base_address=self._base_url, request_timeout=self.policy.timeout)
        raise_for_answer(resp)
        output = resp.output
        results = getattr(output, "results", None) if output is not None else None
        return scores_by_index([dict(r) for r in results] if isinstance(results, list) else results, len(documents))


def build(settings: Settings, env: Mapping[str, str] | None) -> DashScopeReranker:
    """rerank.provider = dashscope (registered in rerank/providers.py): gte-rerank-v2 unless rerank.model says; the
    key from rerank.api-key-env, else DASHSCOPE_API_KEY, is needed now."""
    key_env = settings["rerank.api-key-env"] or DEFAULT_KEY_ENV["dashscope"]
    key = secret(key_env, env)
    if not key:
        raise ConfigError(f"rerank.provider = dashscope needs an API key in ${key_env}. Set it, or set "
                          "rerank.provider = none.")
    return DashScopeReranker(key, settings["rerank.model"] or DEFAULT_MODEL, settings["rerank.base-url"] or None,
                             api_key_env=key_env, timeout=settings["rerank.timeout"],
                             max_retries=settings["rerank.max-retries"])

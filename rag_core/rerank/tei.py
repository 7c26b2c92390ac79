"""Hugging Face text-embeddings-inference serving a reranker: `POST {base}/rerank` with
`{query, texts, truncate}`, answered by `[{index, score}, ...]` sorted by score. TEI refuses more than
`--max-client-batch-size` texts (32 by default), so documents go 32 per request; texts longer than the
model's input are truncated by the server (`truncate: true`) instead of refused."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..config import Settings, redact_uri
from ..errors import ConfigError, RerankError
from ..registry import secret
from ..remote import Endpoint
from .base import RemoteReranker, scores_by_index


class TEIReranker(RemoteReranker):
    max_documents = 32
    limits_name = "TEI's default --max-client-batch-size"
    limits_code = "rerank.service.tei"

    def __init__(self, base_url: str, model: str = "", api_key: str = "", *, batch_size: int = 32,
                 timeout: float = 5.0, max_retries: int = 1, api_key_env: str = "", **adapter: Any) -> None:
        if not base_url:
            raise RerankError("The TEI reranker needs rerank.base-url (the server's root, e.g. "
                              "http://localhost:8080).", "config")
        self._url = base_url.rstrip("/") + "/rerank"
        self.max_documents = batch_size
        endpoint = Endpoint(f"The TEI reranker at {redact_uri(base_url.rstrip('/'))}", "rerank", RerankError,
                            path="rerank", key_env=api_key_env, has_key=bool(api_key),
                            url_hint=" (the server's root, e.g. http://localhost:8080)",
                            bad_request_hint=f" If it is about the batch size, start TEI with --max-client-batch-size "
                                             f"{batch_size} or more.")
        super().__init__(endpoint, f"tei:{model or redact_uri(base_url.rstrip('/'))}", timeout=timeout,
                         max_retries=max_retries, secret=api_key, **adapter)

    def __repr__(self) -> str:  # never shows the key
        return f"TEIReranker(url={redact_uri(self._url)!r})"

    def _score_batch(self, query: str, documents: list[str]) -> list[float]:
        answer = self._post_json(self._url, {"query": query, "texts": documents, "truncate": True})
        return scores_by_index(answer, len(documents), score="score")


def build(settings: Settings, env: Mapping[str, str] | None) -> TEIReranker:
    """rerank.provider = tei (registered in rerank/providers.py): rerank.base-url is needed (the server's root); a
    key only when rerank.api-key-env names one."""
    key_env = settings["rerank.api-key-env"]
    if not settings["rerank.base-url"]:
        raise ConfigError("rerank.provider = tei needs rerank.base-url (the server's root, e.g. http://localhost:8080).")
    return TEIReranker(settings["rerank.base-url"], settings["rerank.model"], secret(key_env, env) if key_env else "",
                       api_key_env=key_env, timeout=settings["rerank.timeout"],
                       max_retries=settings["rerank.max-retries"])

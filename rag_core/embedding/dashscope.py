"""DashScope (Alibaba Cloud Model Studio) text embeddings through the `dashscope` SDK.

The SDK takes the endpoint and the timeout per call (`base_address=`, `request_timeout=`), so nothing
global in the SDK is ever changed: two embedders with different endpoints can live in one process.
For HTTP errors the SDK returns a response with `status_code`, `code` and `message` rather than
raising; it is turned into `HTTPFailure` so that retries and messages treat it like any other error.
"""

from __future__ import annotations

from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

import numpy as np

from ..config import Settings, redact_uri
from ..errors import EmbeddingError
from ..registry import DEFAULT_KEY_ENV, secret
from ..remote import HTTPFailure, MalformedReply
from .base import Role
from .remote import EmbeddingServiceError, RemoteEmbedder, endpoint, texts

DEFAULT_BASE_URL = "https://dashscope.aliyuncs.com/api/v1"
# Texts per call the API accepts: 10 for text-embedding-v3/v4, 25 for the older v1/v2, which also
# have a fixed size (1536) and take no `dimension` parameter.
_LEGACY_MODELS = {"text-embedding-v1", "text-embedding-v2"}
_PER_CALL_LIMIT = {"text-embedding-v1": 25, "text-embedding-v2": 25}
_DEFAULT_PER_CALL_LIMIT = 10


def raise_for_answer(resp: Any) -> None:
    """A `dashscope` response that is not 200, as `HTTPFailure` (status, DashScope's code and message)."""
    if resp.status_code != HTTPStatus.OK:
        code = resp.code if resp.code not in (None, "Unknown") else ""  # "Unknown": a body that is not JSON
        raise HTTPFailure(resp.status_code, {"code": code, "message": resp.message or ""}, resp.headers)


class DashScopeEmbedder(RemoteEmbedder):
    """`text-embedding-v4` (or v3) over DashScope's native HTTP API.

    `api_key_env` only names the variable in messages; the key itself is read by whoever builds
    this object. The key is checked on first use, not here, so a workbench without a key can still
    open and browse an index built with this embedder.
    """

    def __init__(self, api_key: str | None, model: str = "text-embedding-v4", dimension: int = 1024,
                 base_url: str | None = None, batch_size: int = 10, timeout: float = 30.0, max_retries: int = 4,
                 *, api_key_env: str = "DASHSCOPE_API_KEY", **adapter: Any) -> None:
        if dimension < 1:
            raise EmbeddingError(f"The DashScope embedding dimension must be positive, got {dimension}.")
        self._api_key = api_key or ""
        self._api_key_env = api_key_env
        self._model = model
        self._base_url = base_url.rstrip("/") if base_url else None  # None: the SDK's default endpoint
        self._dim = dimension
        self.name = f"dashscope:{model}"
        where = redact_uri(self._base_url or DEFAULT_BASE_URL)
        super().__init__(endpoint(f"The DashScope embedding service at {where}", model=model, key_env=api_key_env,
                                  has_key=bool(self._api_key), url_hint=" (it should end in /api/v1)",
                                  auth_hint=f", that the key belongs to the endpoint's region and may use {model}"),
                         batch_size=min(batch_size, _PER_CALL_LIMIT.get(model, _DEFAULT_PER_CALL_LIMIT)),
                         timeout=timeout, max_retries=max_retries, secret=self._api_key, **adapter)

    def __repr__(self) -> str:  # never shows the key
        return f"DashScopeEmbedder(model={self._model!r}, dimension={self.dim}, base_url={self._base_url!r})"

    @property
    def dim(self) -> int:
        return self._dim

    def _embed(self, items: list[str], role: Role) -> np.ndarray:
        if not self._api_key:
            raise EmbeddingServiceError(f"No DashScope API key: set {self._api_key_env} (or choose another "
                                        "embedding provider).", "config")
        return super()._embed(items, role)

    def _request_batch(self, batch: list[str], role: Role) -> np.ndarray:
        import dashscope

        resp = dashscope.TextEmbedding.call(
            model=self._model, input=batch, dimension=None if self._model in _LEGACY_MODELS else self.dim,
            text_type=role, api_key=self._api_key, base_address=self._base_url,
            request_timeout=self.policy.timeout)
        raise_for_answer(resp)
        return self._vectors(resp.output, len(batch))

    def _vectors(self, output: Any, n: int) -> np.ndarray:
        rows = output.get("embeddings") if isinstance(output, dict) else None
        if not isinstance(rows, list) or len(rows) != n:
            got = len(rows) if isinstance(rows, list) else "no"
            raise MalformedReply(f"answered with {got} vectors for {texts(n)}; check that it is DashScope's "
                                 "native API")
        out = np.empty((n, self.dim), dtype=np.float32)
        seen: set[int] = set()
        for row in rows:
            index, vector = (row.get("text_index"), row.get("embedding")) if isinstance(row, dict) else (None, None)
            if not isinstance(index, int) or not 0 <= index < n or index in seen:
                raise MalformedReply(f"answered with a bad text_index ({index!r}) for {texts(n)}")
            if not isinstance(vector, list) or len(vector) != self.dim:
                got = len(vector) if isinstance(vector, list) else "no"
                raise EmbeddingError(
                    f"DashScope returned {got}-dimensional vectors but {self.dim} were expected; "
                    f"check embedding.dimension (model {self._model} supports only some sizes).")
            seen.add(index)
            out[index] = vector
        return out


def build(settings: Settings, env: Mapping[str, str] | None) -> DashScopeEmbedder:
    """embedding.provider = dashscope (registered in embedding/providers.py): text-embedding-v4 at 1,024 dimensions
    unless embedding.model and embedding.dimension say otherwise; the key from embedding.api-key-env, else
    DASHSCOPE_API_KEY (checked on first use)."""
    key_env = settings["embedding.api-key-env"] or DEFAULT_KEY_ENV["dashscope"]
    return DashScopeEmbedder(api_key=secret(key_env, env), model=settings["embedding.model"] or "text-embedding-v4",
                             dimension=settings["embedding.dimension"] or 1024,
                             base_url=settings["embedding.base-url"] or None,
                             batch_size=min(10, settings["embedding.batch-size"]),
                             timeout=settings["embedding.timeout"], max_retries=settings["embedding.max-retries"],
                             api_key_env=key_env)

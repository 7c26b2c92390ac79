"""DashScope (Alibaba Cloud Model Studio) text embeddings through the `dashscope` SDK.

The SDK takes the endpoint and the timeout per call (`base_address=`, `request_timeout=`), so nothing
global in the SDK is ever changed: two embedders with different endpoints can live in one process.
For HTTP errors the SDK returns a response with `status_code`, `code` and `message` rather than
raising; transport failures surface as `requests` exceptions. Retries are ours (`rag_core.retry`).
"""

from __future__ import annotations

import logging
import time
from http import HTTPStatus
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..errors import EmbeddingError
from ..retry import call_with_retries
from ._remote import clip as _clip, redact as _redact, refuse_empty as _refuse_empty, texts as _texts

log = logging.getLogger(__name__)

# Texts per call the API accepts: 10 for text-embedding-v3/v4, 25 for the older v1/v2, which also
# have a fixed size (1536) and take no `dimension` parameter.
_LEGACY_MODELS = {"text-embedding-v1", "text-embedding-v2"}
_PER_CALL_LIMIT = {"text-embedding-v1": 25, "text-embedding-v2": 25}
_DEFAULT_PER_CALL_LIMIT = 10
_RETRYABLE_STATUS = {HTTPStatus.REQUEST_TIMEOUT, HTTPStatus.TOO_MANY_REQUESTS}


class _ServiceError(Exception):
    """A non-200 answer, raised so the retry helper can see it (and its Retry-After header)."""

    def __init__(self, status: int, code: str | None, message: str, headers: Mapping[str, str] | None):
        super().__init__(f"HTTP {status} {code or ''}".strip())
        self.status = int(status)
        self.code = code or ""
        self.message = str(message or "")
        self.headers = dict(headers or {})


def _retryable(exc: Exception) -> bool:
    import requests

    if isinstance(exc, _ServiceError):
        return exc.status in _RETRYABLE_STATUS or exc.status >= 500
    # A refused connection is not retried: the SDK already tried twice, and waiting will not help.
    return isinstance(exc, requests.Timeout)


class DashScopeEmbedder:
    """`text-embedding-v4` (or v3) over DashScope's native HTTP API.

    `api_key_env` only names the variable in messages; the key itself is read by whoever builds
    this object. The key is checked on first use, not here, so a workbench without a key can still
    open and browse an index built with this embedder.
    """

    def __init__(
        self,
        api_key: str | None,
        model: str = "text-embedding-v4",
        dimension: int = 1024,
        base_url: str | None = None,
        batch_size: int = 10,
        timeout: float = 30.0,
        max_retries: int = 4,
        *,
        api_key_env: str = "DASHSCOPE_API_KEY",
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if dimension < 1:
            raise EmbeddingError(f"The DashScope embedding dimension must be positive, got {dimension}.")
        if batch_size < 1 or timeout <= 0 or max_retries < 0:
            raise EmbeddingError("DashScope embedder: batch size and timeout must be positive, retries >= 0.")
        self._api_key = api_key or ""
        self._model = model
        self._base_url = base_url.rstrip("/") if base_url else None  # None: the SDK's default endpoint
        self._batch_size = min(batch_size, _PER_CALL_LIMIT.get(model, _DEFAULT_PER_CALL_LIMIT))
        self._timeout = timeout
        self._max_retries = max_retries
        self._api_key_env = api_key_env
        self._sleep = sleep
        self.name = f"dashscope:{model}"
        self.dim = dimension

    def __repr__(self) -> str:  # never shows the key
        return f"DashScopeEmbedder(model={self._model!r}, dimension={self.dim}, base_url={self._base_url!r})"

    @property
    def batch_size(self) -> int:
        """Texts per call, after capping at the API's per-call limit."""
        return self._batch_size

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, "document")

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([text], "query")[0]

    # ------------------------------------------------------------------------------------------
    def _embed(self, texts: Sequence[str], text_type: str) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("embed_documents takes a sequence of texts, not one string")
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        if not self._api_key:
            raise EmbeddingError(
                f"No DashScope API key: set {self._api_key_env} (or choose another embedding provider).")
        _refuse_empty(texts, "query" if text_type == "query" else "text")
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), self._batch_size):
            batch = list(texts[start:start + self._batch_size])
            out[start:start + len(batch)] = self._call(batch, text_type)
        return out

    def _call(self, batch: list[str], text_type: str) -> np.ndarray:
        import dashscope

        def once() -> Any:
            resp = dashscope.TextEmbedding.call(
                model=self._model,
                input=batch,
                dimension=None if self._model in _LEGACY_MODELS else self.dim,
                text_type=text_type,
                api_key=self._api_key,
                base_address=self._base_url,
                request_timeout=self._timeout,
            )
            if resp.status_code != HTTPStatus.OK:
                raise _ServiceError(resp.status_code, resp.code, resp.message, resp.headers)
            return resp

        try:
            resp = call_with_retries(once, retryable=_retryable, max_retries=self._max_retries,
                                     sleep=self._sleep, on_retry=self._log_retry)
        except Exception as exc:
            error = self._explain(exc)
            if error is None:
                raise
            raise error from None
        return self._vectors(resp.output, len(batch))

    def _vectors(self, output: Any, n: int) -> np.ndarray:
        rows = output.get("embeddings") if isinstance(output, dict) else None
        if not isinstance(rows, list) or len(rows) != n:
            got = len(rows) if isinstance(rows, list) else "no"
            raise EmbeddingError(f"DashScope answered with {got} vectors for {_texts(n)}; "
                                 f"check embedding.base-url points at DashScope's native API.")
        out = np.empty((n, self.dim), dtype=np.float32)
        seen: set[int] = set()
        for row in rows:
            index, vector = (row.get("text_index"), row.get("embedding")) if isinstance(row, dict) else (None, None)
            if not isinstance(index, int) or not 0 <= index < n or index in seen:
                raise EmbeddingError(f"DashScope answered with a bad text_index ({index!r}) for {_texts(n)}.")
            if not isinstance(vector, list) or len(vector) != self.dim:
                got = len(vector) if isinstance(vector, list) else "no"
                raise EmbeddingError(
                    f"DashScope returned {got}-dimensional vectors but {self.dim} were expected; "
                    f"check embedding.dimension (model {self._model} supports only some sizes).")
            seen.add(index)
            out[index] = vector
        return out

    def _log_retry(self, retry: int, exc: Exception, delay: float) -> None:
        log.warning("DashScope embedding: %s; retry %d/%d in %.1f s",
                    self._describe(exc), retry, self._max_retries, delay)

    def _describe(self, exc: Exception) -> str:
        if isinstance(exc, _ServiceError):
            text = f"HTTP {exc.status}"
            if exc.code and exc.code != "Unknown":  # the SDK's code for a body that is not JSON
                text += f" {exc.code}"
            if exc.message:
                text += f": {_clip(exc.message)}"
            return _redact(text, self._api_key)
        import requests

        if isinstance(exc, requests.Timeout):
            return f"no answer within {self._timeout:g} s"
        return _redact(f"{type(exc).__name__}: {_clip(str(exc))}", self._api_key)

    def _explain(self, exc: Exception) -> EmbeddingError | None:
        """The message for the person, or None for an exception that is a bug, not a service failure."""
        import requests
        from dashscope.common.error import DashScopeException

        where = self._base_url or "DashScope"
        attempts = f"{self._max_retries + 1} attempt{'s' if self._max_retries else ''}"
        if isinstance(exc, _ServiceError):
            if exc.status in (HTTPStatus.UNAUTHORIZED, HTTPStatus.FORBIDDEN):
                return EmbeddingError(
                    f"The DashScope API key was rejected ({self._describe(exc)}). Check {self._api_key_env}, "
                    f"that the key belongs to the endpoint's region, and that it may use {self._model}.")
            if _retryable(exc):
                return EmbeddingError(
                    f"DashScope embedding kept failing ({self._describe(exc)}) after {attempts}. "
                    f"Try again later; if it is rate limiting, lower embedding.batch-size or ingest less at once.")
            if exc.status == HTTPStatus.NOT_FOUND:
                return EmbeddingError(
                    f"DashScope answered HTTP 404 at {where}: check embedding.base-url "
                    f"(it should end in /api/v1).")
            hint = (f" Check embedding.model ({self._model}) and embedding.dimension ({self.dim})."
                    if exc.code.startswith("InvalidParameter") else "")
            return EmbeddingError(f"DashScope refused the request ({self._describe(exc)}).{hint}")
        if isinstance(exc, requests.Timeout):
            return EmbeddingError(
                f"DashScope did not answer within {self._timeout:g} s ({attempts}). "
                f"Check the network, or raise embedding.timeout.")
        if isinstance(exc, requests.exceptions.JSONDecodeError):
            return EmbeddingError(f"{where} did not answer with JSON: check embedding.base-url.")
        if isinstance(exc, requests.ConnectionError):
            return EmbeddingError(f"Cannot reach {where}: check the network and embedding.base-url.")
        if isinstance(exc, (requests.RequestException, DashScopeException)):
            return EmbeddingError(f"DashScope embedding failed: {self._describe(exc)}")
        return None

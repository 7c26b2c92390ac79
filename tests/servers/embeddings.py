"""Fake embedding services speaking the real wire protocols:

* `DashScopeEmbeddingServer`: DashScope's native text-embedding API
  (`POST /api/v1/services/embeddings/text-embedding/text-embedding`), what `dashscope.TextEmbedding`
  sends; point the SDK at it with `base_address=server.base_url`.
* `OpenAIEmbeddingServer`: OpenAI's `POST /v1/embeddings` (float and base64 encodings); point
  `openai.OpenAI(base_url=server.base_url)` at it.

Vectors are deterministic (`fake_vector(text, dim)`, unit length), so tests can check that every row
came back for the right text.
"""

from __future__ import annotations

import base64
import hashlib
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from . import FakeServer, RecordedRequest, Reply

__all__ = ["DashScopeEmbeddingServer", "OpenAIEmbeddingServer", "fake_vector"]


def fake_vector(text: str, dim: int) -> np.ndarray:
    """The unit float32 vector both fake servers return for `text`."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


def _bearer(request: RecordedRequest) -> str | None:
    auth = request.header("authorization")
    if not auth or not auth.startswith("Bearer "):
        return None
    return auth[len("Bearer "):]


class DashScopeEmbeddingServer(FakeServer):
    PATH = "/api/v1/services/embeddings/text-embedding/text-embedding"
    DIMENSIONS = {
        "text-embedding-v4": (2048, 1536, 1024, 768, 512, 256, 128, 64),
        "text-embedding-v3": (1024, 768, 512, 256, 128, 64),
    }

    def __init__(self, api_key: str | None = "sk-dashscope-test", *, max_batch: int = 10,
                 reverse_order: bool = False) -> None:
        super().__init__()
        self.api_key = api_key  # None: accept any key
        self.max_batch = max_batch
        self.reverse_order = reverse_order  # answer with text_index out of order, as the API may

    @property
    def base_url(self) -> str:
        """What the SDK calls `base_address` / `DASHSCOPE_HTTP_BASE_URL`."""
        return f"{self.url}/api/v1"

    # -- canned errors in DashScope's shape ------------------------------------------------------
    @staticmethod
    def error(status: int, code: str, message: str, *, headers: Mapping[str, str] | None = None,
              delay: float = 0.0) -> Reply:
        payload = {"code": code, "message": message, "request_id": str(uuid.uuid4())}
        return Reply.json(status, payload, headers=headers, delay=delay)

    @classmethod
    def throttled(cls, retry_after: str | None = None) -> Reply:
        headers = {"Retry-After": retry_after} if retry_after is not None else None
        return cls.error(429, "Throttling.RateQuota",
                         "Requests rate limit exceeded, please try again later.", headers=headers)

    @classmethod
    def internal_error(cls) -> Reply:
        return cls.error(500, "InternalError", "An internal error has occured, please try again later.")

    # -- protocol --------------------------------------------------------------------------------
    def handle(self, request: RecordedRequest) -> Reply:
        if request.method != "POST" or request.path.split("?")[0] != self.PATH:
            return self.error(404, "NotFound", f"Not found: {request.path}")
        key = _bearer(request)
        if not key:
            return self.error(401, "InvalidApiKey", "No API-key provided.")
        if self.api_key is not None and key != self.api_key:
            return self.error(401, "InvalidApiKey", "Invalid API-key provided.")
        body = request.json or {}
        model = body.get("model")
        if model not in self.DIMENSIONS:
            return self.error(400, "InvalidParameter", "Model not exist.")
        texts = (body.get("input") or {}).get("texts")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not texts:
            return self.error(400, "InvalidParameter", "Input texts should not be empty.")
        if len(texts) > self.max_batch:
            return self.error(400, "InvalidParameter",
                              f"<400> InternalError.Algo.InvalidParameter: Value error, batch size is invalid, "
                              f"it should not be larger than {self.max_batch}.: input.contents")
        if any(not isinstance(t, str) or not t for t in texts):
            return self.error(400, "InvalidParameter", "Input text should not be empty.")
        params = body.get("parameters") or {}
        dim = int(params.get("dimension", 1024))
        if dim not in self.DIMENSIONS[model]:
            return self.error(400, "InvalidParameter",
                              f"Value error, dimension {dim} is invalid for model {model}.")
        if params.get("text_type", "document") not in ("query", "document"):
            return self.error(400, "InvalidParameter", "text_type must be query or document.")
        rows = [{"text_index": i, "embedding": [float(x) for x in fake_vector(t, dim)]}
                for i, t in enumerate(texts)]
        if self.reverse_order:
            rows.reverse()
        return Reply.json(200, {
            "output": {"embeddings": rows},
            "usage": {"total_tokens": sum(len(t) for t in texts)},
            "request_id": str(uuid.uuid4()),
        })

    # -- assertions helpers ----------------------------------------------------------------------
    def sent_texts(self) -> list[list[str]]:
        return [r.json["input"]["texts"] for r in self.requests]


class OpenAIEmbeddingServer(FakeServer):
    def __init__(self, api_key: str | None = "sk-openai-test", *,
                 models: Mapping[str, int] | None = None, reverse_order: bool = False) -> None:
        super().__init__()
        self.api_key = api_key  # None: no key needed (like many local servers)
        self.models = dict(models or {"test-embed": 16})  # model -> native dimension
        self.reverse_order = reverse_order

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    # -- canned errors in OpenAI's shape ---------------------------------------------------------
    @staticmethod
    def error(status: int, message: str, *, type: str = "invalid_request_error",  # noqa: A002
              code: str | None = None, headers: Mapping[str, str] | None = None,
              delay: float = 0.0) -> Reply:
        payload = {"error": {"message": message, "type": type, "param": None, "code": code}}
        return Reply.json(status, payload, headers={"x-request-id": f"req_{uuid.uuid4().hex}",
                                                     **(headers or {})}, delay=delay)

    @classmethod
    def rate_limited(cls, retry_after: str | None = None) -> Reply:
        headers = {"Retry-After": retry_after} if retry_after is not None else None
        return cls.error(429, "Rate limit reached for requests. Please try again in 1s.",
                         type="requests", code="rate_limit_exceeded", headers=headers)

    @classmethod
    def server_error(cls, status: int = 500) -> Reply:
        return cls.error(status, "The server had an error while processing your request. Sorry about that!",
                         type="server_error")

    # -- protocol --------------------------------------------------------------------------------
    def handle(self, request: RecordedRequest) -> Reply:
        if request.method != "POST" or request.path.split("?")[0] != "/v1/embeddings":
            return self.error(404, f"Invalid URL ({request.method} {request.path})")
        if self.api_key is not None:
            key = _bearer(request)
            if not key:
                return self.error(401, "You didn't provide an API key. You need to provide your API key "
                                       "in an Authorization header using Bearer auth.")
            if key != self.api_key:
                masked = f"{key[:3]}***{key[-3:]}" if len(key) > 8 else "***"
                return self.error(401, f"Incorrect API key provided: {masked}.", code="invalid_api_key")
        body = request.json or {}
        model = body.get("model")
        if model not in self.models:
            return self.error(404, f"The model `{model}` does not exist or you do not have access to it.",
                              code="model_not_found")
        raw = body.get("input")
        texts: list[Any] = [raw] if isinstance(raw, str) else list(raw or [])
        if not texts or any(not isinstance(t, str) or t == "" for t in texts):
            return self.error(400, "'$.input' is invalid. Please check the API reference.")
        dim = self.models[model]
        if body.get("dimensions") is not None:
            dim = int(body["dimensions"])
            if not 1 <= dim <= self.models[model]:
                return self.error(400, f"Invalid 'dimensions': {dim}.", code="invalid_value")
        fmt = body.get("encoding_format", "float")
        data = []
        for i, text in enumerate(texts):
            v = fake_vector(text, dim)
            emb: Any = (base64.b64encode(v.astype("<f4").tobytes()).decode("ascii") if fmt == "base64"
                        else [float(x) for x in v])
            data.append({"object": "embedding", "index": i, "embedding": emb})
        if self.reverse_order:
            data.reverse()
        tokens = sum(len(t) for t in texts)
        return Reply.json(200, {"object": "list", "data": data, "model": model,
                                "usage": {"prompt_tokens": tokens, "total_tokens": tokens}},
                          headers={"x-request-id": f"req_{uuid.uuid4().hex}"})

    def sent_inputs(self) -> list[Iterable[str]]:
        return [r.json["input"] for r in self.requests]

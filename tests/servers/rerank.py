"""Fake rerank services speaking the real wire protocols:

* `DashScopeRerankServer`: DashScope's `POST /api/v1/services/rerank/text-rerank/text-rerank`, what
  `dashscope.TextReRank` sends (`base_address=server.base_url`), with its documented limits: at most 500
  documents, 4,000 tokens per document and 30,000 per request (tokens counted as one per CJK character
  and one per other word: fewer than our adapter's conservative estimate, as real tokenizers give).
* `OpenAIRerankServer`: the de-facto `POST /v1/rerank` of vLLM, Xinference and Jina:
  `{model, query, documents, top_n}` -> `{results: [{index, relevance_score}]}` sorted by relevance.
* `TEIRerankServer`: Hugging Face text-embeddings-inference `POST /rerank` `{query, texts}` ->
  `[{index, score}]`, refusing more than `max_batch` texts (TEI's `--max-client-batch-size`, 32).

Scores are deterministic (`fake_score`): the share of the query's terms found in the document, so a test
can tell which order is right.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from . import FakeServer, RecordedRequest, Reply
from .embeddings import _bearer

__all__ = ["DashScopeRerankServer", "OpenAIRerankServer", "TEIRerankServer", "fake_score", "server_tokens"]

_TERM = re.compile(r"[\u4e00-\u9fff]|[^\W_]+", re.UNICODE)


def fake_score(query: str, document: str) -> float:
    """Share of the query's terms (words; single Chinese characters) that occur in the document."""
    terms = set(_TERM.findall(query.lower()))
    if not terms:
        return 0.0
    found = set(_TERM.findall(document.lower()))
    return round(len(terms & found) / len(terms), 6)


def server_tokens(text: str) -> int:
    return len(_TERM.findall(text))


def _ranked(query: str, documents: list[str], top_n: int | None) -> list[tuple[int, float]]:
    scored = sorted(((i, fake_score(query, d)) for i, d in enumerate(documents)), key=lambda p: (-p[1], p[0]))
    return scored[:top_n] if top_n else scored


class DashScopeRerankServer(FakeServer):
    PATH = "/api/v1/services/rerank/text-rerank/text-rerank"
    MODELS = ("gte-rerank-v2", "gte-rerank", "qwen3-rerank")

    def __init__(self, api_key: str | None = "sk-dashscope-test") -> None:
        super().__init__()
        self.api_key = api_key

    @property
    def base_url(self) -> str:
        return f"{self.url}/api/v1"

    @staticmethod
    def error(status: int, code: str, message: str, *, headers: dict[str, str] | None = None) -> Reply:
        return Reply.json(status, {"code": code, "message": message, "request_id": str(uuid.uuid4())}, headers=headers)

    def handle(self, request: RecordedRequest) -> Reply:
        if request.method != "POST" or request.path.split("?")[0] != self.PATH:
            return self.error(404, "NotFound", f"Not found: {request.path}")
        key = _bearer(request)
        if not key or (self.api_key is not None and key != self.api_key):
            return self.error(401, "InvalidApiKey", "Invalid API-key provided.")
        body = request.json or {}
        if body.get("model") not in self.MODELS:
            return self.error(400, "InvalidParameter", "Model not exist.")
        query = (body.get("input") or {}).get("query")
        documents = (body.get("input") or {}).get("documents")
        if not isinstance(query, str) or not query or not isinstance(documents, list) or not documents:
            return self.error(400, "InvalidParameter", "query and documents are required.")
        if len(documents) > 500:
            return self.error(400, "InvalidParameter", "Range of documents should be [1, 500].")
        if any(server_tokens(d) > 4000 for d in documents) or server_tokens(query) > 4000:
            return self.error(400, "InvalidParameter", "Range of input length should be [1, 4000].")
        if sum(server_tokens(query) + server_tokens(d) for d in documents) > 30000:
            return self.error(400, "InvalidParameter", "The total tokens of the request exceed 30000.")
        params = body.get("parameters") or {}
        ranked = _ranked(query, documents, params.get("top_n"))
        results = [{"index": i, "relevance_score": s} for i, s in ranked]
        if params.get("return_documents"):
            for r in results:
                r["document"] = {"text": documents[r["index"]]}
        return Reply.json(200, {"output": {"results": results},
                                "usage": {"total_tokens": sum(server_tokens(d) for d in documents)},
                                "request_id": str(uuid.uuid4())})

    def sent_documents(self) -> list[list[str]]:
        return [r.json["input"]["documents"] for r in self.requests]


class OpenAIRerankServer(FakeServer):
    def __init__(self, api_key: str | None = None, *, models: tuple[str, ...] = ("test-rerank",)) -> None:
        super().__init__()
        self.api_key = api_key  # None: no key needed, like a local vLLM
        self.models = models

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    @staticmethod
    def error(status: int, message: str, *, headers: dict[str, str] | None = None) -> Reply:
        # vLLM's error shape
        return Reply.json(status, {"object": "error", "message": message, "type": "BadRequestError", "param": None,
                                   "code": status}, headers=headers)

    def handle(self, request: RecordedRequest) -> Reply:
        if request.method != "POST" or request.path.split("?")[0] != "/v1/rerank":
            return Reply.json(404, {"detail": "Not Found"})
        if self.api_key is not None and _bearer(request) != self.api_key:
            return self.error(401, "Unauthorized")
        body = request.json or {}
        if body.get("model") not in self.models:
            return self.error(404, f"The model `{body.get('model')}` does not exist.")
        query, documents = body.get("query"), body.get("documents")
        if (
            not isinstance(query, str)
            or not isinstance(documents, list)
            or not all(isinstance(d, str) for d in documents)
        ):
            return Reply.json(422, {"detail": [{"loc": ["body", "documents"], "msg": "Input should be a valid list"}]})
        ranked = _ranked(query, documents, body.get("top_n"))
        return Reply.json(200, {"id": f"rerank-{uuid.uuid4().hex}", "model": body["model"],
                                "usage": {"total_tokens": sum(server_tokens(d) for d in documents)},
                                "results": [{"index": i, "document": {"text": documents[i]}, "relevance_score": s}
                                            for i, s in ranked]})


class TEIRerankServer(FakeServer):
    def __init__(self, *, max_batch: int = 32) -> None:
        super().__init__()
        self.max_batch = max_batch

    @property
    def base_url(self) -> str:
        return self.url

    @staticmethod
    def error(status: int, message: str, error_type: str = "Validation") -> Reply:
        return Reply.json(status, {"error": message, "error_type": error_type})

    def handle(self, request: RecordedRequest) -> Reply:
        if request.method != "POST" or request.path.split("?")[0] != "/rerank":
            return Reply(404, b"", {})
        body: Any = request.json or {}
        query, texts = body.get("query"), body.get("texts")
        if not isinstance(query, str) or not isinstance(texts, list):
            return Reply.text(422, "Failed to deserialize the JSON body into the target type: missing field `texts`")
        if not texts:
            return self.error(422, "`texts` cannot be empty", "Empty")
        if len(texts) > self.max_batch:
            return self.error(422, f"batch size {len(texts)} > maximum allowed batch size {self.max_batch}")
        return Reply.json(200, [{"index": i, "score": s} for i, s in _ranked(query, texts, None)])

    def sent_texts(self) -> list[list[str]]:
        return [r.json["texts"] for r in self.requests]

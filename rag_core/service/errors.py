"""Errors as HTTP answers: which status each failure gets, and the two body shapes.

`/api` routes answer in SuperBizAgent's envelope, `{"code": <status>, "message": "...", "data": ...}`;
every other route answers `{"error": {"code": "<machine-readable>", "message": "..."}}`. Messages are the
ones written for people everywhere else in the workbench (they never carry keys or tokens); an unexpected
failure says only that it happened, the traceback goes to the server log.

A failure of rag_core gets its status by its type (`from_rag_error`), never by its words. A service the workbench
calls (errors.UpstreamError: a reranker with rerank.on-error = fail, Prometheus, Loki, a chat model) is 502
`upstream_failed`, or 504 `upstream_timeout` when it did not answer in time, with `data: {"upstream": <name>}`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse

from ..errors import (
    AgentError,
    EmbeddingError,
    EmptyKnowledgeBase,
    Forbidden,
    InvalidTags,
    KnowledgeBaseError,
    LoaderError,
    NotFound,
    RagError,
    StoreError,
    Unauthenticated,
    UpstreamError,
    for_client,
)

log = logging.getLogger(__name__)

# A refused file's `code` (LoaderError.code, copied into IngestReport.error_code) -> the HTTP status.
REFUSAL_STATUS: dict[str, int] = {
    "too_large": 413,
    "too_much_text": 413,
    "too_slow": 413,  # reading took longer than loader.max-seconds: too much for one file, like too_much_text
    "unsupported": 415,
    "binary": 415,
    "needs_ocr": 415,  # an image or a scanned PDF, and the OCR extra is not installed: a type this server cannot read
    "undecodable": 422,
    "empty": 422,
    "bad_name": 400,
    "symlink_outside": 400,
}
UNKNOWN_REFUSAL_STATUS = 422  # a failed file whose report carries no code: the file could not be indexed

# Why a knowledge base was refused (KnowledgeBaseError.code) -> the HTTP status; a missing one is a NotFound (404).
KNOWLEDGE_BASE_STATUS: dict[str, int] = {"bad_name": 400, "bad_settings": 400, "exists": 409, "refused": 409}


def refusal_status(code: str) -> int:
    return REFUSAL_STATUS.get(code, UNKNOWN_REFUSAL_STATUS)


class ApiError(HTTPException):
    """An answer other than success, raised by a route (or the request-size guard) and rendered by path.
    An HTTPException, so FastAPI's body parsing lets it through unchanged."""

    def __init__(self, status: int, code: str, message: str, data: Any = None) -> None:
        super().__init__(status, message)
        self.status = status
        self.code = code
        self.message = message
        self.data = data


STATUS_CODES = {400: "bad_request", 401: "unauthorized", 404: "not_found", 405: "method_not_allowed",
                409: "conflict", 413: "too_large", 415: "unsupported", 422: "unprocessable", 502: "upstream_failed",
                503: "unavailable", 504: "upstream_timeout"}


def is_compat(path: str) -> bool:
    return path == "/api" or path.startswith("/api/")


def error_response(path: str, status: int, code: str, message: str, data: Any = None,
                   headers: Mapping[str, str] | None = None) -> JSONResponse:
    """The error answer; its message as a client gets it (errors.for_client: no addresses behind the server, no
    CLI advice)."""
    message = for_client(message)
    if is_compat(path):
        body: dict[str, Any] = {"code": status, "message": message, "data": data}
    else:
        body = {"error": {"code": code, "message": message}}
        if data is not None:
            body["error"]["data"] = data
    return JSONResponse(body, status_code=status, headers=headers)


def from_rag_error(exc: RagError) -> ApiError:
    """The status of a failure raised by rag_core while serving a request, by its type (errors.py); the message is
    the one written for people, never parsed here."""
    message = str(exc)
    if isinstance(exc, NotFound):  # a document or a knowledge base that does not exist
        return ApiError(404, "not_found", message)
    if isinstance(exc, Unauthenticated):
        return ApiError(401, "unauthorized", message)
    if isinstance(exc, Forbidden):  # the message names the role and the knowledge base
        return ApiError(403, "forbidden", message)
    if isinstance(exc, KnowledgeBaseError):  # `code` says why, as the CLI and the catalog name it
        return ApiError(KNOWLEDGE_BASE_STATUS.get(exc.code, 409), exc.code, message)
    if isinstance(exc, EmptyKnowledgeBase):
        return ApiError(409, "empty_knowledge_base", message)
    if isinstance(exc, LoaderError):
        return ApiError(refusal_status(exc.code), exc.code or "refused", message)
    if isinstance(exc, InvalidTags):  # bad input, though the labels file (a StoreError) refuses it
        return ApiError(400, "bad_request", message)
    # The store, or the embedder a knowledge base is searched with (a remote one too): nothing can be searched or
    # indexed until it is back.
    if isinstance(exc, (StoreError, EmbeddingError)):
        return ApiError(503, "unavailable", message)
    if isinstance(exc, UpstreamError):  # a reranker (rerank.on-error = fail), Prometheus, Loki, a chat model
        if exc.deadline:
            return ApiError(504, "upstream_timeout", message, {"upstream": exc.upstream})
        return ApiError(502, "upstream_failed", message, {"upstream": exc.upstream})
    if isinstance(exc, AgentError):
        return ApiError(502, "upstream_failed", message)
    return ApiError(400, "bad_request", message)  # bad input: a query, a setting, a name (RetrievalError, ...)


def validation_message(errors: list[dict[str, Any]]) -> str:
    """One line from pydantic's errors: `retrieve_k: Input should be a valid integer (got 'abc')`."""
    parts = []
    for err in errors[:3]:
        loc = tuple(err.get("loc", ()))
        if loc and loc[0] in ("body", "query", "path", "header", "form", "cookie"):
            loc = loc[1:]  # where it came from; the field name follows
        where = ".".join(str(p) for p in loc)
        text = str(err.get("msg", "invalid"))
        if err.get("type") == "json_invalid":
            parts.append(f"The body is not valid JSON ({(err.get('ctx') or {}).get('error', 'decode error')} at "
                         f"character {err.get('loc', ('', '?'))[-1]})")
            continue
        if err.get("type") == "missing":
            text = "is required"
        elif "input" in err and not isinstance(err["input"], (dict, list)) and err["input"] is not None:
            text += f" (got {str(err['input'])[:60]!r})"
        parts.append(f"{where or 'request'}: {text}")
    more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
    return "; ".join(parts) + more + "."

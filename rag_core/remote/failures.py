"""What went wrong in a remote call, as data: one `Failure` from whatever the SDK or HTTP library raised.

Every client's exceptions are classified here, once: the `openai` SDK's (chat, OpenAI-compatible
embeddings), `requests`' (under the `dashscope` SDK), `httpx`'s (our own JSON clients), and ours
(`HTTPFailure` for a non-2xx answer read by our clients or returned by `dashscope`, `MalformedReply` for
an answer that cannot be used, `DeadlineExceeded`). An exception that is none of these is a bug and is
left alone (`classify` returns None).
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..retry import retry_after_from_headers, retryable_status
from .deadline import DeadlineExceeded

MODEL_NOT_FOUND_CODES = frozenset({"model_not_found", "ModelNotFound", "model_not_exist"})


@dataclass(frozen=True)
class Failure:
    """kind: "timeout", "connection", "auth", "not_found", "rate_limit", "server", "bad_request",
    "malformed" or "stream_error" (an error event inside a streamed answer). `detail` is the server's own
    words or what was wrong with the answer (clipped, secrets blanked by `redacted`)."""

    kind: str
    retryable: bool = False
    status: int | None = None
    detail: str = ""
    code: str = ""
    retry_after: float | None = None
    phase: str = "attempt"  # for timeouts: "attempt", "first" (no answer yet), "idle" (went silent), "total"

    def redacted(self, *secrets: str) -> Failure:
        detail = self.detail
        for secret in secrets:
            if secret:
                detail = detail.replace(secret, "***")
        return replace(self, detail=detail)

    def summary(self) -> str:
        """Short, for retry logs and notices: "HTTP 503", "no answer within 3 s", "connection refused"."""
        if self.status is not None:
            return f"HTTP {self.status}"
        return self.detail or self.kind


class HTTPFailure(Exception):
    """A non-2xx answer (status, body, headers), raised by our HTTP clients and around `dashscope`
    responses so retries and messages see it like any SDK error."""

    def __init__(self, status: int, body: Any = None, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(f"HTTP {status}")
        self.status = int(status)
        self.body = body
        self.headers = dict(headers or {})


class MalformedReply(Exception):
    """The server answered 2xx with something that is not the API's answer. `what` completes a sentence
    after the endpoint's name: "answered with an HTML page (text/html) instead of JSON"."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


def classify(exc: BaseException) -> Failure | None:
    """The failure `exc` stands for, or None when it is not a remote failure (a bug: let it surface)."""
    if isinstance(exc, DeadlineExceeded):
        return Failure("timeout", retryable=exc.phase != "total", detail=f"no answer within "
                       f"{exc.seconds:g} s", phase=exc.phase)
    if isinstance(exc, MalformedReply):
        return Failure("malformed", detail=clip(exc.what))
    if isinstance(exc, HTTPFailure):
        return from_status(exc.status, exc.body, exc.headers)
    for classifier in (_from_openai, _from_httpx, _from_requests):
        failure = classifier(exc)
        if failure is not None:
            return failure
    if isinstance(exc, json.JSONDecodeError):  # an SDK parsing a body that is not JSON
        return Failure("malformed", detail=not_json(exc.doc))
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return Failure("timeout", retryable=True, detail="no answer")
    if isinstance(exc, ConnectionError):
        return Failure("connection", detail=connection_reason(exc))
    return None


def from_status(status: int, body: Any = None, headers: Mapping[str, str] | None = None) -> Failure:
    """A non-2xx answer. `body`: parsed JSON or text, in any provider's error shape."""
    detail, code = server_message(body)
    hint = retry_after_from_headers(headers) if headers else None
    if status in (401, 403):
        kind = "auth"
    elif status == 404:
        kind = "not_found"
    elif status == 429:
        kind = "rate_limit"
    elif retryable_status(status):
        kind = "server"
    else:
        kind = "bad_request"
    return Failure(kind, retryable=retryable_status(status), status=status, detail=detail, code=code,
                   retry_after=hint)


def server_message(body: Any) -> tuple[str, str]:
    """(message, code) from an error body in the shapes providers use: OpenAI's {"error": {"message",
    "code"}}, DashScope's {"code", "message"}, vLLM's {"message"}, FastAPI/Jina's {"detail"}, TEI's
    {"error": "..."}, Loki's and Prometheus's plain text or {"error"}."""
    if isinstance(body, (bytes, bytearray)):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            return clip(body), ""
    if not isinstance(body, dict):
        return "", ""
    error = body.get("error")
    inner: dict = error if isinstance(error, dict) else body
    message = inner.get("message") or inner.get("detail") or inner.get("error") or ""
    code = inner.get("code") or ""
    if isinstance(message, (list, dict)):  # FastAPI validation errors: a list of problems
        message = json.dumps(message, ensure_ascii=False)
    return clip(str(message)), str(code) if isinstance(code, (str, int)) else ""


def clip(text: Any, limit: int = 200) -> str:
    """One line, at most `limit` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def not_json(body: bytes | str, content_type: str = "", instead: str = "the API's JSON") -> str:
    """"answered with an HTML page (text/html) instead of JSON: '<html>...'" and the like."""
    text = body.decode("utf-8", "replace") if isinstance(body, (bytes, bytearray)) else str(body or "")
    kind = content_type.split(";")[0].strip()
    shown = f" ({kind})" if kind else ""
    if not text.strip():
        return f"answered with an empty body{shown} instead of {instead}"
    what = "an HTML page" if "html" in kind or text.lstrip()[:1] == "<" else "text that is not JSON"
    if what == "text that is not JSON" and text.lstrip()[:1] in "{[":
        what = "broken JSON"
    return f"answered with {what}{shown} instead of {instead}: {clip(text, 60)!r}"


def connection_reason(exc: BaseException) -> str:
    """"connection refused", "host not found", "connection reset" or "could not connect", from the chain."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 10:
        seen.append(current)
        current = current.__cause__ or current.__context__ or getattr(current, "reason", None)
        if not isinstance(current, BaseException):
            current = None
    if any(isinstance(e, ConnectionRefusedError) for e in seen):
        return "connection refused"
    text = " ".join(str(e) for e in seen).lower()
    if "refused" in text:
        return "connection refused"
    if any(s in text for s in ("name or service not known", "nodename nor servname", "getaddrinfo",
                               "name resolution", "no address associated", "failed to resolve")):
        return "host not found"
    if "reset" in text or "remotely closed" in text or "disconnected" in text:
        return "connection reset"
    return "could not connect"


# ------------------------------------------------------------------------ per library (imported lazily:
# an exception of a library that was never imported cannot be raised, so sys.modules is enough)
def _from_openai(exc: BaseException) -> Failure | None:
    openai = sys.modules.get("openai")
    if openai is None or not isinstance(exc, openai.OpenAIError):
        return None
    if isinstance(exc, openai.APITimeoutError):
        return Failure("timeout", retryable=True, detail="no answer")
    if isinstance(exc, openai.APIConnectionError):
        return Failure("connection", detail=connection_reason(exc))
    if isinstance(exc, openai.APIStatusError):
        headers = getattr(exc.response, "headers", None)
        return from_status(exc.status_code, exc.body, dict(headers) if headers is not None else None)
    if isinstance(exc, openai.APIResponseValidationError):
        return Failure("malformed", detail=f"answered with a body the API does not define ({clip(exc, 120)})")
    if isinstance(exc, openai.APIError):  # an error event inside a streamed answer
        detail, code = server_message(exc.body) if exc.body is not None else (clip(exc.message), "")
        return Failure("stream_error", detail=detail or clip(exc.message), code=code)
    return Failure("bad_request", detail=clip(exc))


def _from_httpx(exc: BaseException) -> Failure | None:
    httpx = sys.modules.get("httpx")
    if httpx is None or not isinstance(exc, httpx.HTTPError):
        return None
    if isinstance(exc, httpx.TimeoutException):
        return Failure("timeout", retryable=True, detail="no answer")
    if isinstance(exc, httpx.HTTPStatusError):
        return from_status(exc.response.status_code, exc.response.text, dict(exc.response.headers))
    return Failure("connection", detail=connection_reason(exc))


def _from_requests(exc: BaseException) -> Failure | None:
    requests = sys.modules.get("requests")
    if requests is None or not isinstance(exc, requests.RequestException):
        return None
    if isinstance(exc, requests.exceptions.JSONDecodeError):
        return Failure("malformed", detail=not_json(getattr(exc, "doc", "")))
    if isinstance(exc, requests.Timeout):
        return Failure("timeout", retryable=True, detail="no answer")
    if isinstance(exc, requests.ConnectionError):
        return Failure("connection", detail=connection_reason(exc))
    return Failure("bad_request", detail=clip(exc))

"""JSON over HTTP for the clients that have no SDK (Prometheus, Loki, the OpenAI-compatible and TEI
rerank APIs), on `httpx` (pooled connections; it comes with `dashscope` and is declared in pyproject).

`request_json` is one plain attempt, meant to run inside `RemoteAdapter._call`: a non-2xx answer raises
`HTTPFailure`, a 2xx body that is not JSON raises `MalformedReply` saying what came instead. The body is
read chunk by chunk so that an abandoned attempt (its caller's deadline passed) stops at the next chunk.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

from .deadline import DeadlineExceeded, stop_requested
from .failures import HTTPFailure, MalformedReply, not_json

MAX_BODY = 32 * 1024 * 1024  # an answer larger than this is not one of these APIs' answers

_clients: dict[float, Any] = {}
_lock = threading.Lock()


def _client(timeout: float) -> Any:
    """One pooled client per per-read timeout, shared by every adapter in the process (thread-safe)."""
    import httpx

    with _lock:
        client = _clients.get(timeout)
        if client is None:
            client = _clients[timeout] = httpx.Client(timeout=httpx.Timeout(timeout), follow_redirects=True)
        return client


def request_json(method: str, url: str, *, timeout: float, params: Mapping[str, Any] | None = None,
                 json_body: Any = None, headers: Mapping[str, str] | None = None) -> Any:
    """The decoded JSON answer of one request. `timeout` bounds each socket operation (the total is
    bounded by the caller's deadline)."""
    client = _client(timeout)
    with client.stream(method, url, params=params, json=json_body,
                       headers={"Accept": "application/json", **(headers or {})}) as response:
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():
            if stop_requested():
                raise DeadlineExceeded(timeout)
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_BODY:
                raise MalformedReply(f"answered with more than {MAX_BODY // (1024 * 1024)} MB")
        body = b"".join(chunks)
        if response.status_code >= 300:
            raise HTTPFailure(response.status_code, body, response.headers)
        content_type = response.headers.get("content-type", "")
    try:
        return json.loads(body)
    except ValueError:
        raise MalformedReply(not_json(body, content_type)) from None


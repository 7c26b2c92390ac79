"""Who may call the API and how much they may send.

* Bearer token: when RAG_API_TOKEN is set (a secret: environment only, never a setting, never logged),
  every route needs `Authorization: Bearer <token>`, except `/v1/health` and the OpenAPI pages (`/docs`,
  `/openapi.json`: the schema holds no data, and a browser cannot send a header to open them; the
  Swagger page's Authorize button then sends the token with every try).
* Bind address: loopback by default; a non-loopback address without a token is refused unless the
  person says so explicitly (`serve --allow-no-token`).
* Body size: a request whose body exceeds `api.max-body-mb` gets 413, whether it declares its length or
  streams it (chunked): the body is counted as it is read, never buffered past the limit.
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import ConfigError
from .errors import ApiError, error_response

OPEN_PATHS = frozenset({"/v1/health", "/docs", "/docs/oauth2-redirect", "/openapi.json"})


def is_loopback(host: str) -> bool:
    """True when every address `host` names is a loopback address ("localhost", 127.0.0.1, ::1)."""
    host = host.strip().strip("[]")
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)


def check_bind(host: str, token: str, allow_no_token: bool) -> None:
    if token or allow_no_token or is_loopback(host):
        return
    raise ConfigError(
        f"Refusing to serve on {host} without a token: anyone who can reach this address could read and change "
        "the knowledge base. Set RAG_API_TOKEN (clients then send `Authorization: Bearer <token>`), bind "
        "127.0.0.1, or pass --allow-no-token if the network is trusted.")


class BearerAuth:
    """ASGI middleware: 401 unless the request carries the token (constant-time comparison)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] != "http" or not self._expected or scope["path"] in OPEN_PATHS
                or scope["path"].startswith("/docs/static/")):
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        if hmac.compare_digest(given, self._expected):
            await self.app(scope, receive, send)
            return
        message = ("Missing or wrong token: send `Authorization: Bearer <token>` with the value of the server's "
                   "RAG_API_TOKEN." if given else
                   "This API needs a token: send `Authorization: Bearer <token>` (the server's RAG_API_TOKEN).")
        response = error_response(scope["path"], 401, "unauthorized", message,
                                  headers={"WWW-Authenticate": "Bearer"})
        await response(scope, receive, send)


class BodyLimit:
    """ASGI middleware: 413 for bodies over `max_bytes` (declared or counted while reading)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def _too_large(self, size: str) -> ApiError:
        limit = self.max_bytes / (1024 * 1024)
        return ApiError(413, "body_too_large", f"The request body is {size}; this server accepts at most "
                        f"{limit:g} MB (api.max-body-mb).")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            err = self._too_large(f"{int(declared) / (1024 * 1024):.1f} MB")
            # Connection: close, so the client stops sending a body nobody will read.
            response = error_response(scope["path"], err.status, err.code, err.message, headers={"Connection": "close"})
            await response(scope, receive, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message: dict[str, Any] = await receive()  # type: ignore[assignment]
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise self._too_large("larger than the limit")
            return message

        await self.app(scope, counted, send)

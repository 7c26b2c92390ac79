"""Who may call the API and how much they may send.

* Who is calling (`Authenticate`): when RAG_API_TOKEN is set (a secret: environment only, never a setting, never
  logged) or the access store has users, every route needs `Authorization: Bearer <token>` (RAG_API_TOKEN: an
  admin of everything; a user's own token: that user), or the signed-in user's name in `auth.user-header` from
  a reverse proxy in `auth.trusted-proxies` (from any other address that header is ignored); except `/v1/health`
  and the OpenAPI pages (`/docs`, `/openapi.json`: the schema holds no data, and a browser cannot send a header
  to open them; the Swagger page's Authorize button then sends the token with every try). The scheme is
  case-insensitive (RFC 9110); RAG_API_TOKEN needs at least MIN_TOKEN_CHARS characters, checked when `serve`
  starts. What each caller may do is the routes' (deps.Needs: a role per knowledge base).
* Host: a browser lets a page on any site reach this server under the site's own name by DNS rebinding
  (the name first resolves to the site, then to 127.0.0.1), and the Host header is the only trace of it.
  So requests must name a host this server is: a loopback address or `localhost`, the bound address,
  a name in `api.allowed-hosts` (`*`: any); bound to a wildcard address (0.0.0.0, ::), any IP address,
  since an address is not a name anyone can rebind.
* Origin: a page on another site can send a "simple" request (a form post, no preflight) that the server
  runs before CORS decides whether the page may read the answer; without a token nothing else stops it.
  So a request that changes something (any method but GET/HEAD/OPTIONS) that says where it comes from
  (`Origin`, else `Referer`) must come from the server's own origin or one in `api.cors-origins`; `null`
  (a sandboxed frame, a local file) is refused. Without either header (curl, SDKs, scripts) it passes:
  browsers always send Origin with such requests.
* Bind address: loopback by default; a non-loopback address without a token or users is refused unless the
  person says so explicitly (`serve --allow-no-token`).
* Body size: a request whose body exceeds `api.max-body-mb` gets 413, whether it declares its length or
  streams it (chunked): the body is counted as it is read, never buffered past the limit.
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..access.checks import has_accounts
from ..access.records import EVERYONE, Principal
from ..errors import ConfigError
from .errors import ApiError, error_response

if TYPE_CHECKING:
    from ..ports import AccessStore

T = TypeVar("T")
AUTH_THREADS = 8  # the access store's calls at once (a token check is one indexed read)

OPEN_PATHS = frozenset({"/v1/health", "/docs", "/docs/oauth2-redirect", "/openapi.json"})
MIN_TOKEN_CHARS = 16  # `openssl rand -hex 16` gives 32; a short token can be guessed over the network
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})  # read only: a cross-site page cannot read their answers
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARDS = frozenset({"0.0.0.0", "::"})
DEFAULT_PORTS = {"http": 80, "https": 443}


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


def check_bind(host: str, token: str, allow_no_token: bool, *, users: bool = False) -> None:
    """`users`: the access store has users, who sign in with their own tokens."""
    if token or users or allow_no_token or is_loopback(host):
        return
    raise ConfigError(
        f"Refusing to serve on {host} without a token: anyone who can reach this address could read and change "
        "the knowledge base. Make users with their own tokens (`python -m rag_core users create NAME --role "
        "KB=ROLE`) or set RAG_API_TOKEN (clients then send `Authorization: Bearer <token>`), bind 127.0.0.1, or "
        "pass --allow-no-token if the network is trusted.")


def check_token(token: str) -> None:
    """A token set but shorter than MIN_TOKEN_CHARS stops `serve` (the token itself is never shown)."""
    if token and len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(
            f"RAG_API_TOKEN has {len(token)} characters; use at least {MIN_TOKEN_CHARS} (a short token can be "
            "guessed), e.g. RAG_API_TOKEN=$(openssl rand -hex 16).")


PRINCIPAL = "principal"  # where the caller is kept: scope["state"], read by deps.principal_of


@dataclass(frozen=True)
class Proxies:
    """The reverse proxies (`auth.trusted-proxies`: addresses or networks) allowed to name the signed-in user in
    `auth.user-header`; from any other peer the header is ignored (anyone could send it)."""

    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()
    header: bytes = b"x-forwarded-user"

    @classmethod
    def parse(cls, configured: str, header: str) -> Proxies:
        networks = []
        for item in (x.strip() for x in configured.split(",")):
            if not item:
                continue
            try:
                networks.append(ipaddress.ip_network(item.strip("[]"), strict=False))
            except ValueError:
                raise ConfigError(f"auth.trusted-proxies: {item!r} is not an address or a network (as 10.0.0.5 or "
                                  "10.0.0.0/24).") from None
        return cls(tuple(networks), header.strip().lower().encode("latin-1"))

    def trusts(self, peer: str | None) -> bool:
        if not self.networks or not peer:
            return False
        try:
            address = ipaddress.ip_address(peer)
        except ValueError:
            return False
        return any(address in network for network in self.networks)


class Authenticate:
    """ASGI middleware: who is calling, decided once per request and kept in `scope["state"]["principal"]`.

    * `Authorization: Bearer <RAG_API_TOKEN>` (constant-time comparison): EVERYONE, an admin of everything.
    * `Authorization: Bearer <a user's token>`: that user (`AccessStore.authenticate`, read on every request, so a
      revoked token stops working at once).
    * `auth.user-header` from a peer in `auth.trusted-proxies`: the user it names (an unknown or revoked one: 401).
    * nothing, with no RAG_API_TOKEN and no users ever made (revoked ones count): EVERYONE (the one-person setup,
      as before users existed).
    Otherwise 401. The open paths (health, the OpenAPI pages) pass without a caller."""

    def __init__(self, app: ASGIApp, token: str, store: AccessStore, proxies: Proxies | None = None) -> None:
        self.app = app
        self._expected = token.encode()
        self.store = store
        self.proxies = proxies or Proxies()
        self._accounts = False  # a user was made: everyone signs in (`_signs_in`)
        # The store may be a database: its calls run off the event loop, a few at a time.
        self._threads = anyio.CapacityLimiter(AUTH_THREADS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS or scope["path"].startswith("/docs/static/"):
            await self.app(scope, receive, send)
            return
        principal, message = await self._caller(scope)
        if principal is not None:
            scope.setdefault("state", {})[PRINCIPAL] = principal
            await self.app(scope, receive, send)
            return
        response = error_response(scope["path"], 401, "unauthorized", message, headers={"WWW-Authenticate": "Bearer"})
        await response(scope, receive, send)

    async def _caller(self, scope: Scope) -> tuple[Principal | None, str]:
        headers = dict(scope.get("headers") or [])
        client = scope.get("client")
        named = headers.get(self.proxies.header, b"").strip()
        given = headers.get(b"authorization", b"")
        scheme, _, credentials = given.strip().partition(b" ")
        credentials = credentials.strip()
        found: Principal | None = None
        if named and self.proxies.trusts(client[0] if client else None):
            name = named.decode("latin-1")
            found = await self._run(self.store.principal, name)
            message = (f"The signed-in user {name[:100]!r} has no active account on this server (an admin creates "
                       "one with `users create`).")
        # The scheme is case-insensitive (RFC 9110 11.1); RAG_API_TOKEN is compared in constant time.
        elif scheme.lower() == b"bearer" and credentials:
            if self._expected and hmac.compare_digest(credentials, self._expected):
                return EVERYONE, ""
            found = await self._run(self.store.authenticate, credentials.decode("latin-1"))
            message = ("Wrong or revoked token: send `Authorization: Bearer <token>` with your own token (or the "
                       "server's RAG_API_TOKEN).")
        elif given:
            message = ("Missing or wrong token: send `Authorization: Bearer <token>` with your own token (or the "
                       "server's RAG_API_TOKEN).")
        else:
            message = ("This API needs a token: send `Authorization: Bearer <token>` (your own token, or the server's "
                       "RAG_API_TOKEN).")
        if found is None and not self._expected and not await self._signs_in():
            # The one-person setup (no RAG_API_TOKEN, no users): everyone is the one person, whatever they send
            # (an SDK sends some key anyway).
            return EVERYONE, ""
        return found, message

    async def _signs_in(self) -> bool:
        """Whether a user was ever made (users are revoked, never deleted: once true, it stays true and the store
        is not asked again; until then an unsigned request costs one read)."""
        if not self._accounts:
            self._accounts = await self._run(has_accounts, self.store)
        return self._accounts

    async def _run(self, call: Callable[..., T], *args: Any) -> T:
        return await anyio.to_thread.run_sync(call, *args, limiter=self._threads)


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


@dataclass(frozen=True)
class Hosts:
    """The Host header values this server answers to (see the module docstring)."""

    names: frozenset[str]  # lower case, without port or brackets
    any_address: bool = False  # bound to a wildcard address: every IP address is one of ours
    anything: bool = False  # api.allowed-hosts has `*` (e.g. behind a proxy that checks names itself)

    def allow(self, host: str) -> bool:
        if self.anything or host in self.names:
            return True
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False
        return address.is_loopback or self.any_address


def allowed_hosts(bound: str, configured: str) -> Hosts:
    """The hosts of a server bound to `bound` with `api.allowed-hosts` = `configured` (comma-separated)."""
    extra = {_host_name(h) for h in configured.split(",") if h.strip()}
    bound_name = bound.strip().strip("[]").lower()
    return Hosts(frozenset(LOOPBACK_NAMES | extra | {bound_name}) - {"*"}, any_address=bound_name in WILDCARDS,
                 anything="*" in extra)


def _host_name(value: str) -> str:
    """`Example.COM:8000` -> `example.com`, `[::1]:8000` -> `::1`, `localhost.` -> `localhost`."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].partition("]")[0]
    if value.count(":") == 1:
        value = value.partition(":")[0]
    return value.rstrip(".")


def _origin(value: str, default_scheme: str = "") -> tuple[str, str, int] | None:
    """(scheme, host, port) of an origin or URL, or of a Host header with `default_scheme`; None if it is not one."""
    url = urlsplit(value.strip() if "//" in value else f"{default_scheme}://{value.strip()}")
    try:
        host, port = url.hostname, url.port
    except ValueError:
        return None
    if not url.scheme or not host:
        return None
    return url.scheme.lower(), host.rstrip("."), port or DEFAULT_PORTS.get(url.scheme.lower(), 0)


class BrowserGuard:
    """ASGI middleware: 403 for a Host this server is not (DNS rebinding) and for a state-changing request
    from a page on another origin (a cross-site form post). Inside CORSMiddleware, which answers preflights."""

    def __init__(self, app: ASGIApp, hosts: Hosts, origins: tuple[str, ...] = ()) -> None:
        self.app = app
        self.hosts = hosts
        self.any_origin = "*" in origins
        self.origins = frozenset(o for o in (_origin(x) for x in origins if x != "*") if o is not None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        refusal = self._refusal(scope, {k: headers[k].decode("latin-1") for k in (b"host", b"origin", b"referer")
                                        if k in headers})
        if refusal is None:
            await self.app(scope, receive, send)
            return
        code, message = refusal
        await error_response(scope["path"], 403, code, message)(scope, receive, send)

    def _refusal(self, scope: Scope, headers: dict[bytes, str]) -> tuple[str, str] | None:
        host = headers.get(b"host")
        if host is not None and not self.hosts.allow(_host_name(host)):
            shown = host[:100]
            return ("host_not_allowed", f"This server does not answer to the host {shown!r} (a protection against "
                    "DNS rebinding): call it by its address or localhost, or add the name to api.allowed-hosts.")
        if scope["method"] in SAFE_METHODS:
            return None
        claimed = (headers.get(b"origin") or headers.get(b"referer") or "").strip()
        if not claimed or self.any_origin:
            return None
        null = claimed.lower() == "null"
        origin = None if null else _origin(claimed)
        own = _origin(host, scope.get("scheme", "http")) if host is not None else None
        if origin is not None and (origin in self.origins or origin == own):
            return None
        if null:
            where = "a page without an origin (Origin: null: a sandboxed frame or a local file)"
        elif origin is None:
            where = f"a page whose origin cannot be read ({claimed[:100]!r})"
        else:
            scheme, name, port = origin
            where = f"a page on {scheme}://{name}" + ("" if port == DEFAULT_PORTS.get(scheme) else f":{port}")
        return ("origin_not_allowed", f"Refused {scope['method']} from {where}: only this server's own pages and the "
                "origins in api.cors-origins may change anything here; add the page's origin to api.cors-origins "
                "if it is yours.")

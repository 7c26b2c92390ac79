"""`/mcp`: the MCP server of `python -m rag_core mcp` (rag_core.mcp) over streamable HTTP, on the service's
knowledge bases, behind the same sign-in, Host and Origin checks and body limit as every route (they are
the app's middleware, and this is one of its routes). Each tool call runs as the principal of its request (its
`Authorization` header, or a trusted proxy's user header: security.Authenticate), with the same role checks as
the routes: a knowledge base the caller cannot read is absent from `list_knowledge_bases` and unknown to the
other tools.

Stateless, with JSON answers: each POST carries one JSON-RPC message and gets its answer, with no session
kept between requests (nothing to expire, nothing held per client), which every streamable-HTTP client
speaks. The SDK's own Host/Origin check is off: security.BrowserGuard makes it for every route, with
api.allowed-hosts and api.cors-origins. Searches and explanations queue with /v1/search's
(`Service.lookup_threads`).

The SDK (about 1.5 s of imports) and the server are loaded at the first request to /mcp, not when the app is
made: most processes that make the app (the tests, a service nobody reaches over MCP) never use it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup, TaskStatus
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from ..access.records import Principal
from ..errors import Unauthenticated
from .errors import error_response
from .security import PRINCIPAL

if TYPE_CHECKING:
    from .state import Service

PATH = "/mcp"


class McpEndpoint:
    """The ASGI app at /mcp. `running()` (in the app's lifespan) holds the task group the MCP requests run in."""

    def __init__(self, service: Service) -> None:
        self._service = service
        self._manager: Any = None  # the SDK's StreamableHTTPSessionManager, once started
        self._group: TaskGroup | None = None
        self._lock: anyio.Lock | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with anyio.create_task_group() as group:
            self._group, self._lock = group, anyio.Lock()
            try:
                yield
            finally:
                self._group = None
                group.cancel_scope.cancel()  # ends the session manager (its requests are answered or cancelled)

    def around(self, lifespan: Callable[[Any], AbstractAsyncContextManager[None]]
               ) -> Callable[[Any], AbstractAsyncContextManager[None]]:
        """The app's `lifespan` with `running()` inside it: MCP stops before the knowledge bases close."""
        @asynccontextmanager
        async def both(app: Any) -> AsyncIterator[None]:
            async with lifespan(app), self.running():
                yield

        return both

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("method") == "GET":  # a stream of server messages: a stateless server sends none (405, as the
            # streamable-HTTP transport says, instead of a connection held open with nothing on it)
            await error_response(scope["path"], 405, "method_not_allowed", "This MCP endpoint is stateless and sends "
                                 "no messages of its own: POST each JSON-RPC request to /mcp.",
                                 headers={"Allow": "POST"})(scope, receive, send)
            return
        manager = self._manager or await self._start()
        if manager is None:
            await error_response(scope["path"], 503, "unavailable", "The MCP endpoint is not running (the app was "
                                 "started without its lifespan).")(scope, receive, send)
            return
        await manager.asgi_app(scope, receive, send)

    async def _start(self) -> Any:
        if self._group is None or self._lock is None:
            return None
        async with self._lock:
            if self._manager is None:
                manager = await anyio.to_thread.run_sync(self._build)  # the imports, off the event loop
                await self._group.start(self._serve, manager)
                self._manager = manager
        return self._manager

    def _build(self) -> Any:
        from mcp.server.transport_security import TransportSecuritySettings

        from ..mcp import Library, build_server

        svc = self._service
        if svc.kbs is None:
            raise RuntimeError("the service has no knowledge bases pool")
        server = build_server(Library(svc.kbs, svc.lookup_threads, caller=request_principal))
        # Made for its session manager (what serves the requests); the Starlette app around it is not used.
        server.streamable_http_app(json_response=True, stateless_http=True,
                                   transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
        return server.session_manager

    @staticmethod
    async def _serve(manager: Any, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with manager.run():
            task_status.started()
            await anyio.sleep_forever()


def request_principal(ctx: Any) -> Principal:
    """The principal security.Authenticate found for the HTTP request a tool call came in (the SDK hands the tool
    that request in its context)."""
    request = getattr(ctx.request_context, "request", None) if ctx is not None else None
    found = request.scope.get("state", {}).get(PRINCIPAL) if isinstance(request, Request) else None
    if not isinstance(found, Principal):
        raise Unauthenticated("No caller was identified for this MCP request: send `Authorization: Bearer <token>`.")
    return found

"""The FastAPI application: one open workbench, one agent, the chat sessions, and the routes.

    app = create_app(workbench)     # the workbench comes from bootstrap.build_workbench, like the app's

`create_app` takes an already open workbench so that a locked or broken knowledge base fails before the
server starts, as one clear line (see server.py), and closes it when the server shuts down.
"""

from __future__ import annotations

import logging
import os
import threading
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, AsyncIterator, Mapping

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse

from ..errors import RagError
from .errors import STATUS_CODES, ApiError, error_response, from_rag_error, validation_message
from .security import BearerAuth, BodyLimit, BrowserGuard, allowed_hosts
from .sessions import SessionStore

if TYPE_CHECKING:
    from ..agent import Agent
    from ..bootstrap import Workbench
    from ..config import Settings
    from ..kb.pool import OpenKnowledgeBases

log = logging.getLogger(__name__)

DOCS_STATIC = "/docs/static"
STREAM_THREADS = 100  # streamed turns at once, each mostly waiting for its model
CHAT_TURNS = 100  # the default of api.chat-turns

API_TITLE = "RAG workbench API"
DESCRIPTION = """\
The workbench's knowledge base over HTTP: SuperBizAgent's routes under `/api` (chat, SSE chat stream, upload,
alert triage) and native routes under `/v1` (search with every hit's fate, documents, chunks, health). Every
route runs the same ingest, lookup and agent as the app and the CLI.

With `RAG_API_TOKEN` set on the server, send `Authorization: Bearer <token>` (the Authorize button).
"""


@dataclass
class Streams:
    """How many streamed turns are running (health shows it; a test waits for a stopped turn with it)."""

    active: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def opened(self) -> None:
        with self._lock:
            self.active += 1

    def closed(self) -> None:
        with self._lock:
            self.active -= 1


@dataclass
class Capacity:
    """At most `limit` of something at once, refused beyond it (never queued): the chat turns of /api/chat."""

    limit: int
    active: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def enter(self) -> bool:
        with self._lock:
            if self.active >= self.limit:
                return False
            self.active += 1
            return True

    def leave(self) -> None:
        with self._lock:
            self.active -= 1


@dataclass
class Service:
    workbench: Workbench  # the default knowledge base's
    agent: Agent
    sessions: SessionStore
    auth: bool
    env: Mapping[str, str] | None = None  # where secrets are read (None: the process environment)
    streams: Streams = field(default_factory=Streams)
    # Streamed turns run their steps in threads of their own (see streaming.sse), not in the default pool that
    # searches, uploads and health checks use.
    stream_threads: anyio.CapacityLimiter = field(default_factory=lambda: anyio.CapacityLimiter(STREAM_THREADS))
    kbs: OpenKnowledgeBases | None = None  # every knowledge base, opened on first use (/v1/kbs/{name}/...)
    _agents: dict[str, Agent] = field(default_factory=dict)
    _agents_lock: threading.Lock = field(default_factory=threading.Lock)
    # /v1/search lookups: at most `api.lookup-threads` at once, the others queue first come first served (see
    # lookup_thread_count).
    lookup_threads: anyio.CapacityLimiter = field(
        default_factory=lambda: anyio.CapacityLimiter(lookup_thread_count(None)))
    # /api/chat turns: at most `api.chat-turns` at once (503 beyond), their steps in threads of their own, one
    # per turn: a turn waits for its model for seconds, and in the default pool 40 of them held every thread
    # that health checks, documents and uploads need.
    chat_turns: Capacity = field(default_factory=lambda: Capacity(CHAT_TURNS))
    chat_threads: anyio.CapacityLimiter = field(default_factory=lambda: anyio.CapacityLimiter(CHAT_TURNS))

    def workbench_of(self, kb: str | None) -> Workbench:
        """The workbench of knowledge base `kb` (None or "": the default one). Raises KnowledgeBaseError."""
        if not kb or kb == self.workbench.settings.kb_name or self.kbs is None:
            return self.workbench
        return self.kbs.get(kb)

    def agent_of(self, kb: str | None) -> Agent:
        """The agent searching knowledge base `kb` (None or "": the default one's agent)."""
        from ..bootstrap import build_agent

        wb = self.workbench_of(kb)
        if wb is self.workbench:
            return self.agent
        with self._agents_lock:
            name = wb.settings.kb_name
            if name not in self._agents:
                self._agents[name] = build_agent(wb, self.env)
            return self._agents[name]

    def forget(self, kb: str) -> None:
        """Close knowledge base `kb` (deleted, or its settings changed: it is opened again when next used)."""
        with self._agents_lock:
            self._agents.pop(kb, None)
        if self.kbs is not None and kb != self.workbench.settings.kb_name:
            self.kbs.forget(kb)


def lookup_thread_count(settings: Settings | None) -> int:
    """How many /v1/search lookups run at once (`api.lookup-threads`; 0 = four times the cores). A lookup is CPU in
    this process (under one interpreter lock) and in Milvus Lite's: with every request in its own thread, many
    clients share the cores all at once and each finishes late; queued in one place, the earlier ones finish
    first. Lookups running together share their Milvus requests (store.coalesce), so a few more than the cores
    pay: bench/api.py compares four times with twice the cores (the default before)."""
    configured = settings["api.lookup-threads"] if settings is not None else 0
    return configured or 4 * (os.cpu_count() or 1)


async def service_of(request: Request) -> Service:
    return request.app.state.service


def create_app(workbench: Workbench, *, token: str = "", env: Mapping[str, str] | None = None,
               agent: Agent | None = None, close_workbench: bool = True,
               process_settings: Settings | None = None, host: str | None = None) -> FastAPI:
    """`token`: the bearer token ("" = no auth). `agent`: defaults to `bootstrap.build_agent(workbench, env)`.
    `close_workbench`: close it on shutdown (the server owns it). `process_settings`: the process's (the values of
    knowledge bases created over /v1/kbs; default: the workbench's). `host`: the address the server is bound to
    (default api.host), which requests may name in their Host header."""
    from ..bootstrap import build_agent, open_knowledge_bases
    from .compat import router as compat_router
    from .kbs import router as kbs_router
    from .native import router as native_router

    settings = workbench.settings
    service = Service(workbench, agent or build_agent(workbench, env),
                      SessionStore(settings["api.max-sessions"], settings["chat.history-pairs"]), bool(token), env,
                      kbs=open_knowledge_bases(workbench, process_settings, env, own_first=close_workbench),
                      lookup_threads=anyio.CapacityLimiter(lookup_thread_count(settings)),
                      chat_turns=Capacity(settings["api.chat-turns"]),
                      chat_threads=anyio.CapacityLimiter(settings["api.chat-turns"]))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        service.kbs.close_all()  # the other knowledge bases; the first too when the server owns it

    app = FastAPI(title=API_TITLE, description=DESCRIPTION, version=_version(), lifespan=lifespan,
                  docs_url=None, redoc_url=None)
    _mount_docs(app)
    app.state.service = service
    app.include_router(compat_router)
    app.include_router(native_router)
    app.include_router(kbs_router)
    _install_error_handlers(app)
    # Outermost last: CORS answers preflights (which carry no token) and labels every answer, even a 401 or 403;
    # inside it the Host and Origin checks, which refuse before anything else is read.
    app.add_middleware(BodyLimit, max_bytes=int(settings["api.max-body-mb"] * 1024 * 1024))
    if token:
        app.add_middleware(BearerAuth, token=token)
    origins = [o.strip().rstrip("/") for o in settings["api.cors-origins"].split(",") if o.strip()]
    app.add_middleware(BrowserGuard, hosts=allowed_hosts(host or settings["api.host"], settings["api.allowed-hosts"]),
                       origins=tuple(origins))
    if origins:
        app.add_middleware(CORSMiddleware, allow_origins=origins, allow_methods=["GET", "POST", "DELETE"],
                           allow_headers=["Authorization", "Content-Type", "X-User-Id"], max_age=600)
    _declare_bearer(app, bool(token))
    return app


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        if isinstance(exc, ApiError):
            return error_response(request.url.path, exc.status, exc.code, exc.message, exc.data)
        code = STATUS_CODES.get(exc.status_code, "error")
        message = str(exc.detail)
        if exc.status_code == 404:
            message = f"No route {request.method} {request.url.path}; the routes are listed at /docs."
        elif exc.status_code == 405:
            message = f"{request.method} is not allowed on {request.url.path}; see /docs."
        return error_response(request.url.path, exc.status_code, code, message, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def bad_input(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(request.url.path, 400, "bad_request", validation_message(list(exc.errors())))

    @app.exception_handler(RagError)
    async def rag_error(request: Request, exc: RagError) -> JSONResponse:
        err = from_rag_error(exc)
        return error_response(request.url.path, err.status, err.code, err.message)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("%s %s failed", request.method, request.url.path)
        return error_response(request.url.path, 500, "internal", "An unexpected error happened; the details are "
                              "in the server log.")


def _mount_docs(app: FastAPI) -> None:
    """/docs with Swagger UI's files served from the `fastapi-offline` package (Swagger UI 5, which reads the
    OpenAPI 3.1 schema FastAPI writes): FastAPI's default page loads them from a CDN, which leaves it blank on a
    machine without internet."""
    from fastapi.openapi.docs import get_swagger_ui_html
    from starlette.responses import HTMLResponse
    from starlette.staticfiles import StaticFiles
    import fastapi_offline

    static = Path(fastapi_offline.__file__).parent / "static"
    app.mount(DOCS_STATIC, StaticFiles(directory=static), name="swagger-ui")

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="/openapi.json", title=f"{API_TITLE} — docs",
                                   swagger_js_url=f"{DOCS_STATIC}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{DOCS_STATIC}/swagger-ui.css",
                                   swagger_favicon_url=f"{DOCS_STATIC}/favicon.png")


def _declare_bearer(app: FastAPI, enabled: bool) -> None:
    """Adds the bearer scheme to the OpenAPI schema, so /docs offers an Authorize button."""
    if not enabled:
        return
    original = app.openapi

    def openapi() -> dict:
        if app.openapi_schema:
            return app.openapi_schema
        schema = original()
        schema.setdefault("components", {}).setdefault("securitySchemes", {})["bearer"] = {
            "type": "http", "scheme": "bearer"}
        schema["security"] = [{"bearer": []}]
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rag-workbench")
    except PackageNotFoundError:
        return "0"

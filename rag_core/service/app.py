"""The FastAPI application: the service's state (state.Service), its routes (compat, native, kbs), the error
handlers and the middleware.

    app = create_app(workbench)     # the workbench comes from bootstrap.build_workbench, like the app's

`create_app` takes an already open workbench so that a locked or broken knowledge base fails before the
server starts, as one clear line (see server.py), and closes it when the server shuts down.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse
from starlette.routing import Route

from ..errors import RagError
from ..sources.book import Source
from ..sources.schedule import Scheduler
from .compat import router as compat_router
from .errors import STATUS_CODES, ApiError, error_response, from_rag_error, validation_message
from .feedback import router as feedback_router
from .kbs import router as kbs_router
from .mcp_http import PATH as MCP_PATH
from .mcp_http import McpEndpoint
from .native import router as native_router
from .openai_compat import is_openai
from .openai_compat import rag_refusal as openai_refusal
from .openai_compat import router as openai_router
from .security import Authenticate, BodyLimit, BrowserGuard, Proxies, allowed_hosts
from .sessions import Sessions, SessionStore
from .sources import router as sources_router
from .state import Capacity, Service, lookup_thread_count

if TYPE_CHECKING:
    from ..agent import Agent
    from ..bootstrap import Workbench
    from ..config import Settings
    from ..ports import AccessStore

log = logging.getLogger(__name__)

DOCS_STATIC = "/docs/static"
API_TITLE = "RAG workbench API"
DESCRIPTION = """\
The workbench's knowledge base over HTTP: SuperBizAgent's routes under `/api` (chat, SSE chat stream, upload,
alert triage) and native routes under `/v1` (search with every hit's fate, documents, chunks, health). Every
route runs the same ingest, lookup and agent as the app and the CLI.

With `RAG_API_TOKEN` set on the server, or users made with `python -m rag_core users create`, send
`Authorization: Bearer <token>` (the Authorize button): each route needs a role (reader, editor, admin) on its
knowledge base.
"""


def sources_scheduler(service: Service) -> Scheduler:
    """The scheduled syncs of every knowledge base's sources (`sources add --every`), run in the background."""
    from ..bootstrap import build_source_book
    from ..sources.manage import sync_source

    book = build_source_book(service.workbench.settings, service.env)

    def run(source: Source) -> object:
        wb = service.workbench_of(source.kb)
        return sync_source(wb.settings, book, source, wb.ingestor)

    return Scheduler(book, run)


def create_app(workbench: Workbench, *, token: str = "", env: Mapping[str, str] | None = None,
               agent: Agent | None = None, close_workbench: bool = True,
               process_settings: Settings | None = None, host: str | None = None,
               access: AccessStore | None = None, sessions: Sessions | None = None,
               chat_turns: Capacity | None = None) -> FastAPI:
    """`token`: RAG_API_TOKEN ("" = none). `access`: the users, roles and audit log (default:
    `bootstrap.build_access_store`, closed with the app; one passed in is the caller's). Without a token and without
    users nobody needs to sign in (the one-person setup). `agent`: defaults to `bootstrap.build_agent(workbench, env)`.
    `close_workbench`: close it on shutdown (the server owns it). `process_settings`: the process's (the values of
    knowledge bases created over /v1/kbs; default: the workbench's). `host`: the address the server is bound to
    (default api.host), which requests may name in their Host header. `sessions`: where chat sessions are kept
    (default: this process's memory; the workers of `serve --workers` share theirs). `chat_turns`: how many chat
    turns may run at once (default: api.chat-turns in this process; the workers count theirs together)."""
    from ..bootstrap import build_access_store, build_agent, build_turn_store, open_knowledge_bases

    settings = workbench.settings
    own_access = access is None
    access = access if access is not None else build_access_store(process_settings or settings, env)
    service = Service(workbench, agent or build_agent(workbench, env),
                      sessions if sessions is not None else SessionStore(settings["api.max-sessions"],
                                                                         settings["chat.history-pairs"]),
                      bool(token), env,
                      kbs=open_knowledge_bases(workbench, process_settings, env, own_first=close_workbench),
                      lookup_threads=anyio.CapacityLimiter(lookup_thread_count(settings)),
                      chat_turns=chat_turns if chat_turns is not None else Capacity(settings["api.chat-turns"]),
                      chat_threads=anyio.CapacityLimiter(settings["api.chat-turns"]),
                      turns=build_turn_store(process_settings or settings), access=access)

    mcp = McpEndpoint(service)

    scheduler = sources_scheduler(service)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        scheduler.start()
        yield
        scheduler.stop()
        if service.kbs is not None:
            service.kbs.close_all()  # the other knowledge bases; the first too when the server owns it
        if own_access:
            access.close()

    app = FastAPI(title=API_TITLE, description=DESCRIPTION, version=_version(), lifespan=mcp.around(lifespan),
                  docs_url=None, redoc_url=None)
    _mount_docs(app)
    app.state.service = service
    app.include_router(compat_router)
    app.include_router(native_router)
    app.include_router(kbs_router)
    app.include_router(sources_router)
    app.include_router(openai_router)  # /v1/chat/completions, /v1/models
    # The MCP server over streamable HTTP (mcp_http.py): an ASGI app as the route's endpoint, exactly at /mcp.
    app.router.routes.append(Route(MCP_PATH, mcp, include_in_schema=False))
    app.include_router(feedback_router)
    _install_error_handlers(app)
    # Outermost last: CORS answers preflights (which carry no token) and labels every answer, even a 401 or 403;
    # inside it the Host and Origin checks, which refuse before anything else is read.
    app.add_middleware(BodyLimit, max_bytes=int(settings["api.max-body-mb"] * 1024 * 1024))
    # Who is calling (a principal per request, security.Authenticate); routes check roles with deps.Needs.
    app.add_middleware(Authenticate, token=token, store=access,
                       proxies=Proxies.parse(settings["auth.trusted-proxies"], settings["auth.user-header"]))
    origins = [o.strip().rstrip("/") for o in settings["api.cors-origins"].split(",") if o.strip()]
    app.add_middleware(BrowserGuard, hosts=allowed_hosts(host or settings["api.host"], settings["api.allowed-hosts"]),
                       origins=tuple(origins))
    if origins:
        app.add_middleware(CORSMiddleware, allow_origins=origins, allow_methods=["GET", "POST", "DELETE"],
                           allow_headers=["Authorization", "Content-Type", "X-User-Id"], max_age=600)
    _declare_bearer(app, True)
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
        if is_openai(request.url.path):  # a role check's 404 / 403 before the route ran, in OpenAI's shape
            return openai_refusal(exc, "model")
        err = from_rag_error(exc)
        return error_response(request.url.path, err.status, err.code, err.message, err.data)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("%s %s failed", request.method, request.url.path)
        return error_response(request.url.path, 500, "internal", "An unexpected error happened; the details are "
                              "in the server log.")


def _mount_docs(app: FastAPI) -> None:
    """/docs with Swagger UI's files served from the `fastapi-offline` package (Swagger UI 5, which reads the
    OpenAPI 3.1 schema FastAPI writes): FastAPI's default page loads them from a CDN, which leaves it blank on a
    machine without internet."""
    import fastapi_offline
    from fastapi.openapi.docs import get_swagger_ui_html
    from starlette.responses import HTMLResponse
    from starlette.staticfiles import StaticFiles

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

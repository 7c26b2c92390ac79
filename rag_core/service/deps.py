"""The dependencies routes declare (FastAPI's `Depends`): the running service, who is calling, the role a route
needs on the knowledge base it works on, and that knowledge base. Routes import them from here, and app.py imports
the routes; nothing here imports a route.

Every route but the open ones (health, the OpenAPI pages: security.OPEN_PATHS) declares a `Needs`: the role
(reader, editor, admin; None: any signed-in caller, whose answer shows only what they may read) on the knowledge base
its `kb` reader finds in the request (the query string, the path, the JSON body, a form field; None: the default
one). tests/service/test_roles.py walks the app's routes and fails on one that declares none.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Query, Request
from fastapi.concurrency import run_in_threadpool

from ..access.checks import forbidden, require, unknown_kb
from ..access.records import AccessScope, Principal, Role
from ..bootstrap import Workbench
from ..errors import KnowledgeBaseNotFound, Unauthenticated
from .security import PRINCIPAL
from .state import Service

T = TypeVar("T")
K = TypeVar("K", bound=str | None)
KbReader = Callable[[Request], Awaitable[str | None]]


async def service_of(request: Request) -> Service:
    return request.app.state.service


ServiceDep = Annotated[Service, Depends(service_of)]


def principal_of(request: Request) -> Principal:
    """The caller security.Authenticate found for this request."""
    principal = request.scope.get("state", {}).get(PRINCIPAL)
    if not isinstance(principal, Principal):
        raise Unauthenticated("No caller was identified for this request: send `Authorization: Bearer <token>`.")
    return principal


# ------------------------------------------------------------------------------------- where the knowledge base is
async def no_kb(request: Request) -> str | None:
    """The route works on the default knowledge base."""
    return None


async def kb_in_query(request: Request) -> str | None:
    return request.query_params.get("kb") or None


async def kb_in_path(request: Request) -> str | None:
    return request.path_params.get("kb") or None


def kb_in_json(*names: str) -> KbReader:
    """The first of `names` in the JSON body (already read and kept by the request; a body that is not a JSON
    object names none: the route then refuses it)."""
    async def read(request: Request) -> str | None:
        try:
            body = await request.json()
        except (ValueError, UnicodeDecodeError):
            return None
        if isinstance(body, dict):
            for name in names:
                if isinstance(body.get(name), str) and body[name].strip():
                    return str(body[name]).strip()
        return None

    read.__name__ = f"kb_in_json_{'_'.join(names)}"
    return read


def kb_in_form(name: str) -> KbReader:
    async def read(request: Request) -> str | None:
        value = (await request.form()).get(name)
        return value.strip() or None if isinstance(value, str) else None

    read.__name__ = f"kb_in_form_{name}"
    return read


# ------------------------------------------------------------------------------------------------------- roles
class Needs:
    """The role a route needs on the knowledge base `kb` reads from the request (`role` None: any signed-in caller).
    As a dependency it answers the caller; it raises the 404 of an unknown knowledge base when the caller cannot
    read it (never a 403 that would confirm its name) and a 403 naming the role when they can but lack it.
    `new`: the route makes that knowledge base: a 403 either way (whether the name is taken says nothing hidden)."""

    def __init__(self, role: Role | None, kb: KbReader = no_kb, *, new: bool = False) -> None:
        self.role = role
        self.kb = kb
        self.new = new

    def __repr__(self) -> str:
        return f"Needs({self.role.value if self.role else 'caller'}, {self.kb.__name__})"

    async def __call__(self, request: Request) -> Principal:
        principal = principal_of(request)
        if self.role is None or principal.everything:
            return principal
        svc: Service = request.app.state.service
        name = await self.kb(request) or svc.workbench.settings.kb_name
        if not principal.can(name, self.role) and self.new:
            raise forbidden(principal, name, self.role)
        if not principal.can(name, self.role):  # the names are read only to refuse
            names = await run_in_threadpool(kb_names, svc)
            require(principal, name, self.role, names)
        return principal


def kb_names(svc: Service) -> list[str]:
    return svc.kb_manager.names() if svc.kbs is not None else [svc.workbench.settings.kb_name]


def readable(svc: Service, principal: Principal, names: list[str] | None = None) -> list[str]:
    """The knowledge bases `principal` may read (listings show only these)."""
    return principal.readable(kb_names(svc) if names is None else names)


def scope_for(request: Request, kb: str | None) -> AccessScope:
    """What a lookup on `kb` (None: the default one) may retrieve for this request's caller: the one place the HTTP
    routes compute it (passed on through access.checks.lookup_access)."""
    svc: Service = request.app.state.service
    return principal_of(request).scope(kb or svc.workbench.settings.kb_name)


def turn_scope(svc: Service, principal: Principal, kb: str | None) -> AccessScope:
    """What an agent turn on `kb` (None or "": the default one) may retrieve for `principal`: the agent is shared by
    every caller of a knowledge base, so the scope goes with each turn (`Agent.run(..., access=)`)."""
    return principal.scope(kb or svc.workbench.settings.kb_name)


KB_QUERY = Query(description="A knowledge base (default: the default one).")


def reading(role: Role, where: str) -> Callable[..., Awaitable[Workbench]]:
    """A dependency answering the workbench of the knowledge base named in the query string (`where` = "query",
    default: the default one) or the path ("path"), once the caller holds `role` on it."""
    if where == "query":
        # Defaults, not Annotated aliases: these annotations are strings, read in the module's namespace.
        in_query = Depends(Needs(role, kb_in_query))

        async def from_query(svc: ServiceDep, principal: Principal = in_query,
                             kb: Annotated[str | None, KB_QUERY] = None) -> Workbench:
            return await workbench_for(svc, principal, kb)

        return from_query
    in_path = Depends(Needs(role, kb_in_path))

    async def from_path(svc: ServiceDep, kb: str, principal: Principal = in_path) -> Workbench:
        return await workbench_for(svc, principal, kb)

    return from_path


async def workbench_for(svc: Service, principal: Principal, kb: str | None) -> Workbench:
    """`workbench_of`, where an unknown knowledge base's message names only what `principal` may read."""
    try:
        return await workbench_of(svc, kb)
    except KnowledgeBaseNotFound:
        if principal.everything:
            raise
        names = await run_in_threadpool(readable, svc, principal)
        raise unknown_kb(kb or "", names) from None


def hiding(svc: Service, principal: Principal, call: Callable[[K], T], kb: K) -> T:
    """`call(kb)` (blocking), where an unknown knowledge base's message names only what `principal` may read (a
    role on a name not made yet must not list the others)."""
    try:
        return call(kb)
    except KnowledgeBaseNotFound:
        if principal.everything:
            raise
        raise unknown_kb(str(kb or ""), readable(svc, principal)) from None


async def workbench_of(svc: Service, kb: str | None) -> Workbench:
    """The default knowledge base's workbench at once; another one from a worker thread (opening it blocks).
    Async, so that a request on the default knowledge base makes no extra hop to a worker thread."""
    if not kb or kb == svc.workbench.settings.kb_name:
        if svc.default_upgraded():  # its vectors were swapped by an upgrade: opened again (blocking), once
            await run_in_threadpool(svc.reopen_default)
        return svc.workbench
    return await run_in_threadpool(svc.workbench_of, kb)


def needs_of(dependant: Any) -> list[Needs]:
    """Every `Needs` a route's dependency tree declares (the roles test reads them)."""
    found = [dependant.call] if isinstance(dependant.call, Needs) else []
    for sub in dependant.dependencies:
        found.extend(needs_of(sub))
    return found

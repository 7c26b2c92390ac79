"""The dependencies routes declare (FastAPI's `Depends`): the running service, and the knowledge base a route
works on. Routes import them from here, and app.py imports the routes; nothing here imports a route."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query, Request
from fastapi.concurrency import run_in_threadpool

from ..bootstrap import Workbench
from .state import Service


async def service_of(request: Request) -> Service:
    return request.app.state.service


ServiceDep = Annotated[Service, Depends(service_of)]


# The routes that work on one knowledge base are made twice (native.kb_routes): under `/v1` on the default knowledge
# base (or `?kb=NAME`), and under `/v1/kbs/{kb}` (kbs.py).
async def query_kb(svc: ServiceDep,
                   kb: Annotated[str | None, Query(description="A knowledge base (default: the default one).")] = None
                   ) -> Workbench:
    return await workbench_of(svc, kb)


async def path_kb(svc: ServiceDep, kb: str) -> Workbench:
    return await workbench_of(svc, kb)


async def workbench_of(svc: Service, kb: str | None) -> Workbench:
    """The default knowledge base's workbench at once; another one from a worker thread (opening it blocks).
    Async, so that a request on the default knowledge base makes no extra hop to a worker thread."""
    if not kb or kb == svc.workbench.settings.kb_name:
        return svc.workbench
    return await run_in_threadpool(svc.workbench_of, kb)

"""`/v1/kbs`: knowledge bases over HTTP, as `python -m rag_core kb ...` does (the same KnowledgeBases
operations), and every search and documents route of `/v1` on a named knowledge base:
`/v1/kbs/{kb}/search`, `/v1/kbs/{kb}/documents`, ... (the routes of native.py, made a second time).

The list shows only the knowledge bases the caller may read; making, changing, copying and deleting one needs the
admin role on it (making or copying: on the new name too), and so does starting an embedder upgrade
(`POST /v1/kbs/{kb}/upgrade`, kb.upgrade: a process of its own, as `kb upgrade --background`)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends
from starlette.responses import JSONResponse

from ..access.checks import forbidden
from ..access.records import Principal, Role
from ..errors import KnowledgeBaseError
from . import audit
from .deps import Needs, ServiceDep, hiding, kb_in_json, kb_in_path, readable
from .models import KnowledgeBaseChange, KnowledgeBaseIn, UpgradeIn
from .native import kb_routes

router = APIRouter(prefix="/v1", tags=["knowledge bases"])

Caller = Annotated[Principal, Depends(Needs(None))]


@router.get("/kbs", summary="Every knowledge base you may read, with its documents and settings (as `kb list "
            "--json`)")
def list_kbs(svc: ServiceDep, principal: Caller) -> list[dict[str, Any]]:
    kbs = svc.kb_manager
    return [kbs.info(name).to_dict() for name in readable(svc, principal, kbs.names())]


@router.post("/kbs", status_code=201, summary="Make an empty knowledge base (as `kb create`)",
             responses={400: {}, 403: {}, 409: {"description": "The name is taken"}})
def create_kb(body: KnowledgeBaseIn, svc: ServiceDep,
              principal: Annotated[Principal, Depends(Needs(Role.ADMIN, kb_in_json("name"), new=True))]
              ) -> dict[str, Any]:
    """Settings not given are the server's (rag.toml, environment). 400 for a bad name or setting, 403 without the
    admin role on the new name (`*=admin`, or that name's), 409 for a name in use."""
    kbs = svc.kb_manager
    kb = kbs.create(body.name, body.settings)
    audit.record(svc, principal, "kbs.create", kb.name, kb.name)
    return kbs.info(kb.name).to_dict()


@router.get("/kbs/{kb}", summary="One knowledge base: what it holds and the settings it keeps (as `kb show`)")
def show_kb(kb: str, svc: ServiceDep, principal: Annotated[Principal, Depends(Needs(Role.READER, kb_in_path))]
            ) -> dict[str, Any]:
    return hiding(svc, principal, svc.kb_manager.info, kb).to_dict()


@router.patch("/kbs/{kb}", summary="Change a knowledge base's chunking or search defaults (as `kb set`)")
def change_kb(kb: str, body: KnowledgeBaseChange, svc: ServiceDep,
              principal: Annotated[Principal, Depends(Needs(Role.ADMIN, kb_in_path))]) -> dict[str, Any]:
    """Its documents keep their chunks until re-indexed; the embedder cannot change (copy it instead)."""
    kbs = svc.kb_manager
    hiding(svc, principal, kbs.get, kb)  # one unknown to the caller's eyes: named as the others are hidden
    kbs.update(kb, body.settings)
    svc.forget(kb)  # opened again with the new settings on its next use
    audit.record(svc, principal, "kbs.set", kb, kb, settings=body.settings)
    return kbs.info(kb).to_dict()


@router.delete("/kbs/{kb}", summary="Delete a knowledge base, its documents and kept originals (as `kb delete`)")
def delete_kb(kb: str, svc: ServiceDep,
              principal: Annotated[Principal, Depends(Needs(Role.ADMIN, kb_in_path))]) -> dict[str, str]:
    """409 for the default knowledge base, which cannot be deleted. `note`: present when some of its storage was
    kept because another knowledge base shares it (names that differ only by case)."""
    kbs = svc.kb_manager
    hiding(svc, principal, kbs.get, kb)  # 404 before anything is closed
    svc.forget(kb)
    note = kbs.delete(kb)
    audit.record(svc, principal, "kbs.delete", kb, kb)
    return {"deleted": kb, **({"note": note} if note else {})}


@router.post("/kbs/{kb}/copy", summary="A new knowledge base re-chunked and re-embedded from this one's kept "
             "originals (as `kb copy`)", responses={207: {"description": "Some documents could not be copied"}})
def copy_kb(kb: str, body: KnowledgeBaseIn, svc: ServiceDep,
            principal: Annotated[Principal, Depends(Needs(Role.ADMIN, kb_in_path))]) -> JSONResponse:
    """`name`: the new knowledge base; `settings`: what differs from this one's. Answers when the copy is done,
    with one report per document (200; 207 when some could not be rebuilt, e.g. indexed from text). Needs the admin
    role on both."""
    _admin_of_new(principal, body.name)
    hiding(svc, principal, svc.kb_manager.get, kb)
    result = svc.kb_manager.copy(kb, body.name, body.settings)
    audit.record(svc, principal, "kbs.copy", body.name, kb, source=kb, failed=len(result.failed))
    return JSONResponse(result.to_dict(), status_code=207 if result.failed else 200)


@router.post("/kbs/{kb}/upgrade", status_code=202, summary="Embed every chunk again with a better embedder in the "
             "background, then swap in one step (as `kb upgrade --background`)",
             responses={400: {}, 404: {}, 409: {"description": "Its upgrade is running already"}})
def start_upgrade(kb: str, svc: ServiceDep,
                  principal: Annotated[Principal, Depends(Needs(Role.ADMIN, kb_in_path))],
                  body: UpgradeIn | None = None) -> dict[str, Any]:
    """`to`: the embedder to move to, recorded as the knowledge base's `embedding.upgrade-to` (default: the one
    recorded). Answers once the job's process is started: `GET /v1/kbs/{kb}/upgrade` shows its progress (the status
    whose `pid` is the one answered here). Searches use the current embedder until the job swaps."""
    from ..kb import upgrade

    kbs = svc.kb_manager
    hiding(svc, principal, kbs.get, kb)
    status = upgrade.read_status(kbs.settings, kb)
    if status is not None and status.state == upgrade.RUNNING:
        raise KnowledgeBaseError(f"The upgrade of knowledge base {kb!r} to {status.to} is running already: GET "
                                 f"/v1/kbs/{kb}/upgrade shows its progress.", "exists")
    to = upgrade.target(kbs, kb, body.to if body is not None else "")
    pid = upgrade.start(kbs.settings, kb)
    audit.record(svc, principal, "kbs.upgrade", kb, kb, to=to, background=True)
    return {"kb": kb, "to": to, "pid": pid}


@router.get("/kbs/{kb}/upgrade", summary="Where the knowledge base's embedder upgrade stands (as `kb show --json`'s "
            "`upgrade`)")
def upgrade_status(kb: str, svc: ServiceDep,
                   principal: Annotated[Principal, Depends(Needs(Role.READER, kb_in_path))]) -> dict[str, Any]:
    """`upgrade`: null when it never had one; else its state (running, stopped: start it again to resume,
    finished), chunks `done` of `total`, `fraction`, `seconds_left` (null when not known), `pid`, `error`."""
    from ..kb.upgrade import read_status

    kbs = svc.kb_manager
    hiding(svc, principal, kbs.get, kb)
    status = read_status(kbs.settings, kb)
    return {"upgrade": status.to_dict() if status is not None else None}


def _admin_of_new(principal: Principal, name: str) -> None:
    """A knowledge base being made needs the admin role on its name (403 whether or not it exists: nothing about
    other knowledge bases is revealed)."""
    if not principal.can(name, Role.ADMIN):
        raise forbidden(principal, name, Role.ADMIN)


kb_routes(router, "/kbs/{kb}", "path")

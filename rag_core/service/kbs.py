"""`/v1/kbs`: knowledge bases over HTTP, as `python -m rag_core kb ...` does (the same KnowledgeBases
operations), and every search and documents route of `/v1` on a named knowledge base:
`/v1/kbs/{kb}/search`, `/v1/kbs/{kb}/documents`, ... (the routes of native.py, made a second time)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.responses import JSONResponse

from .deps import ServiceDep, path_kb
from .models import KnowledgeBaseChange, KnowledgeBaseIn
from .native import kb_routes

router = APIRouter(prefix="/v1", tags=["knowledge bases"])


@router.get("/kbs", summary="Every knowledge base, with its documents and settings (as `kb list --json`)")
def list_kbs(svc: ServiceDep) -> list[dict[str, Any]]:
    kbs = svc.kb_manager
    return [kbs.info(name).to_dict() for name in kbs.names()]


@router.post("/kbs", status_code=201, summary="Make an empty knowledge base (as `kb create`)",
             responses={400: {}, 409: {"description": "The name is taken"}})
def create_kb(body: KnowledgeBaseIn, svc: ServiceDep) -> dict[str, Any]:
    """Settings not given are the server's (rag.toml, environment). 400 for a bad name or setting, 409 for a
    name in use."""
    kbs = svc.kb_manager
    kb = kbs.create(body.name, body.settings)
    return kbs.info(kb.name).to_dict()


@router.get("/kbs/{kb}", summary="One knowledge base: what it holds and the settings it keeps (as `kb show`)")
def show_kb(kb: str, svc: ServiceDep) -> dict[str, Any]:
    return svc.kb_manager.info(kb).to_dict()


@router.patch("/kbs/{kb}", summary="Change a knowledge base's chunking or search defaults (as `kb set`)")
def change_kb(kb: str, body: KnowledgeBaseChange, svc: ServiceDep) -> dict[str, Any]:
    """Its documents keep their chunks until re-indexed; the embedder cannot change (copy it instead)."""
    kbs = svc.kb_manager
    kbs.update(kb, body.settings)
    svc.forget(kb)  # opened again with the new settings on its next use
    return kbs.info(kb).to_dict()


@router.delete("/kbs/{kb}", summary="Delete a knowledge base, its documents and kept originals (as `kb delete`)")
def delete_kb(kb: str, svc: ServiceDep) -> dict[str, str]:
    """409 for the default knowledge base, which cannot be deleted. `note`: present when some of its storage was
    kept because another knowledge base shares it (names that differ only by case)."""
    kbs = svc.kb_manager
    kbs.get(kb)  # 404 before anything is closed
    svc.forget(kb)
    note = kbs.delete(kb)
    return {"deleted": kb, **({"note": note} if note else {})}


@router.post("/kbs/{kb}/copy", summary="A new knowledge base re-chunked and re-embedded from this one's kept "
             "originals (as `kb copy`)", responses={207: {"description": "Some documents could not be copied"}})
def copy_kb(kb: str, body: KnowledgeBaseIn, svc: ServiceDep) -> JSONResponse:
    """`name`: the new knowledge base; `settings`: what differs from this one's. Answers when the copy is done,
    with one report per document (200; 207 when some could not be rebuilt, e.g. indexed from text)."""
    result = svc.kb_manager.copy(kb, body.name, body.settings)
    return JSONResponse(result.to_dict(), status_code=207 if result.failed else 200)


kb_routes(router, "/kbs/{kb}", path_kb)

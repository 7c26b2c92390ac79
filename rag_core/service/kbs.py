"""`/v1/kbs`: knowledge bases over HTTP, as `python -m rag_core kb ...` does (the same KnowledgeBases
operations), and every search and documents route of `/v1` on a named knowledge base:
`/v1/kbs/{kb}/search`, `/v1/kbs/{kb}/documents`, ... (the routes of native.py, made a second time).

The list shows only the knowledge bases the caller may read; making, changing, copying and deleting one needs the
admin role on it (making or copying: on the new name too), and so does starting an embedder upgrade
(`POST /v1/kbs/{kb}/upgrade`, kb.upgrade: a process of its own, as `kb upgrade --background`) or giving it another
BM25 dictionary or stop words (`PUT /v1/kbs/{kb}/bm25`, kb.upgrade.reindex_bm25, as `kb set --dictionary`)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from starlette.responses import JSONResponse

from ..access.checks import forbidden
from ..access.records import Principal, Role
from ..errors import KnowledgeBaseError
from . import audit
from .deps import Needs, ServiceDep, hiding, kb_in_json, kb_in_path, readable
from .models import Bm25In, KnowledgeBaseChange, KnowledgeBaseIn, UpgradeIn
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


@router.get("/kbs/{kb}/bm25", summary="The knowledge base's BM25 dictionary and stop words (as `kb show --json`)")
def bm25_words(kb: str, svc: ServiceDep,
               principal: Annotated[Principal, Depends(Needs(Role.READER, kb_in_path))]) -> dict[str, Any]:
    info = hiding(svc, principal, svc.kb_manager.info, kb)
    return {"kb": kb, "dictionary": list(info.dictionary), "stop_words": list(info.stop_words)}


@router.put("/kbs/{kb}/bm25", summary="Give the knowledge base another BM25 dictionary and/or stop words: BM25 is "
            "re-indexed, vectors kept (as `kb set --dictionary/--stop-words`)",
            responses={400: {}, 404: {}, 409: {"description": "Its upgrade or re-index is running already"}})
def set_bm25_words(kb: str, body: Bm25In, svc: ServiceDep,
                   principal: Annotated[Principal, Depends(Needs(Role.ADMIN, kb_in_path))]) -> dict[str, Any]:
    """`dictionary`, `stop_words`: lists of terms, one per item (null or absent: kept as they are). Answers when the
    new chunk collection (the same vectors) is swapped in, with the words now in use and `chunks`; searches go on
    with the old words until then. 400 for a bad term (longer than 64 characters, a line break, a comma, `#`, more
    than 2000 terms), 409 while an embedder upgrade or another re-index of it runs."""
    from ..dictionary import terms_of
    from ..errors import RagError
    from ..kb import upgrade

    kbs = svc.kb_manager
    hiding(svc, principal, kbs.get, kb)
    if body.dictionary is None and body.stop_words is None:
        raise RagError("Give `dictionary` or `stop_words` (a list of terms; [] clears it).")
    dictionary = terms_of(body.dictionary, "dictionary") if body.dictionary is not None else None
    stop_words = terms_of(body.stop_words, "stop words") if body.stop_words is not None else None
    status = upgrade.read_status(kbs.settings, kb)
    if status is not None and status.state == upgrade.RUNNING:
        raise KnowledgeBaseError(f"The upgrade of knowledge base {kb!r} is running: GET /v1/kbs/{kb}/upgrade shows "
                                 "its progress; try again when it has finished.", "exists")
    result = upgrade.reindex_bm25(kbs, kb, dictionary, stop_words)  # a sync route: in a worker thread
    info = kbs.info(kb)
    audit.record(svc, principal, "kbs.set", kb, kb, dictionary=len(info.dictionary), stop_words=len(info.stop_words))
    return {"kb": kb, "dictionary": list(info.dictionary), "stop_words": list(info.stop_words),
            "chunks": result.chunks}


@router.get("/kbs/{kb}/bm25/suggest", summary="Terms for the BM25 dictionary from the knowledge base's headings and "
            "code, to review (as `kb suggest-dictionary --json`)")
def suggest_bm25_words(kb: str, svc: ServiceDep,
                       principal: Annotated[Principal, Depends(Needs(Role.READER, kb_in_path))],
                       limit: Annotated[int, Query(ge=1, le=2000, description="At most this many terms.")] = 200
                       ) -> dict[str, Any]:
    """`suggestions`: `{"term", "kind": "heading"|"code", "chunks"}`, the terms in most chunks first."""
    from ..retrieval.dictionary import suggest_for

    wb = hiding(svc, principal, svc.workbench_of, kb)
    return {"kb": kb, "suggestions": [s.to_dict() for s in suggest_for(wb.store, limit)]}


@router.get("/kbs/{kb}/bm25/terms", summary="A query's BM25 terms with the knowledge base's words (an estimate of "
            "Milvus's analyzer: retrieval.keywords)")
def bm25_terms(kb: str, svc: ServiceDep, principal: Annotated[Principal, Depends(Needs(Role.READER, kb_in_path))],
               q: Annotated[str, Query(min_length=1, max_length=2000, description="The query.")]) -> dict[str, Any]:
    from ..retrieval.keywords import query_terms

    info = hiding(svc, principal, svc.kb_manager.info, kb)
    return {"kb": kb, "terms": list(query_terms(q, info.dictionary, info.stop_words))}


def _admin_of_new(principal: Principal, name: str) -> None:
    """A knowledge base being made needs the admin role on its name (403 whether or not it exists: nothing about
    other knowledge bases is revealed)."""
    if not principal.can(name, Role.ADMIN):
        raise forbidden(principal, name, Role.ADMIN)


kb_routes(router, "/kbs/{kb}", "path")

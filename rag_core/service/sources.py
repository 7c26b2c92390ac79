"""`/v1/kbs/{kb}/sources`: a knowledge base's sources over HTTP, as `python -m rag_core sources ...` does (the same
rag_core.sources.manage calls, the same JSON as `--json`).

Listing and showing need the reader role, a sync the editor role, adding and removing a source the admin role. A
`folder` or export source, or a `git` one at a path or file:// URL of the server, reads the server's own files:
adding one needs the admin role on every knowledge base (`*=admin` or RAG_API_TOKEN), the server's operator, not
only this one's admin."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from pydantic import ConfigDict, Field

from ..access.checks import forbidden
from ..access.records import ALL, Principal, Role
from ..sources.book import Source, SourceBook
from ..sources.manage import needs_operator, new_source, remove_source, sync_source
from . import audit
from .deps import Needs, ServiceDep, hiding, kb_in_path
from .models import Inbound
from .state import Service

router = APIRouter(prefix="/v1", tags=["sources"])

Reader = Annotated[Principal, Depends(Needs(Role.READER, kb_in_path))]
Editor = Annotated[Principal, Depends(Needs(Role.EDITOR, kb_in_path))]
Admin = Annotated[Principal, Depends(Needs(Role.ADMIN, kb_in_path))]


class SourceIn(Inbound):
    """A source to add (as `sources add KB TYPE LOCATION`)."""

    model_config = ConfigDict(extra="forbid")

    type: str = Field(max_length=40, description="folder, git, web, ... (`sources add --help` lists them)")
    location: str = Field(max_length=4000, description="The folder, the repository, the start URL, the export...")
    name: str | None = Field(None, max_length=64, description="Default: from the location's last part.")
    folder: str | None = Field(None, max_length=1000, description="Where its documents go (default: its name).")
    every: int = Field(0, ge=0, le=525_600, description="Minutes between the syncs `serve` runs (0: only when "
                       "asked).")
    options: dict[str, Any] = Field(default_factory=dict, description="The type's options (include/exclude globs "
                                    "for a folder, branch and subfolder for git, depth and max-pages for web).")


class SourceChange(Inbound):
    """What of a source may change after it was added (as `sources set`)."""

    model_config = ConfigDict(extra="forbid")

    every: int = Field(ge=0, le=525_600, description="Minutes between the syncs `serve` runs (0: only when asked).")


def _book(svc: Service) -> SourceBook:
    from ..bootstrap import build_source_book

    return build_source_book(svc.workbench.settings, svc.env)


def _source(svc: Service, principal: Principal, kb: str, name: str) -> tuple[SourceBook, Source]:
    hiding(svc, principal, svc.workbench_of, kb)  # an unknown knowledge base first, named as the others are hidden
    book = _book(svc)
    return book, book.get(name, kb)


@router.get("/kbs/{kb}/sources", summary="The knowledge base's sources with their last sync (as `sources list "
            "--json`)")
def list_sources(kb: str, svc: ServiceDep, principal: Reader) -> list[dict[str, Any]]:
    hiding(svc, principal, svc.workbench_of, kb)
    return [s.to_dict() for s in _book(svc).all(kb)]


@router.post("/kbs/{kb}/sources", status_code=201, summary="Add a source (as `sources add`); nothing is indexed "
             "before its first sync", responses={400: {}, 403: {}})
def add_source(kb: str, body: SourceIn, svc: ServiceDep, principal: Admin) -> dict[str, Any]:
    wb = hiding(svc, principal, svc.workbench_of, kb)
    if needs_operator(body.type, body.location) and not principal.can(ALL, Role.ADMIN):
        raise forbidden(principal, ALL, Role.ADMIN)
    made = new_source(wb.settings, kb, body.type, body.location, body.options, name=body.name, folder=body.folder)
    source = _book(svc).add(replace(made, every=body.every))
    audit.record(svc, principal, "sources.add", kb, source.name, type=source.type, location=source.location,
                 folder=source.folder)
    return source.to_dict()


@router.get("/kbs/{kb}/sources/{name}", summary="One source: its options and last sync, each failure with its "
            "reason (as `sources show --json`)")
def show_source(kb: str, name: str, svc: ServiceDep, principal: Reader) -> dict[str, Any]:
    return _source(svc, principal, kb, name)[1].to_dict()


@router.post("/kbs/{kb}/sources/{name}/sync", summary="Sync a source now (as `sources sync`): its counts, each "
             "failure with its reason", responses={400: {"description": "The source cannot be read, or the sync "
                                                          "would delete more than sources.max-delete-share"}})
def sync_one(kb: str, name: str, svc: ServiceDep, principal: Editor,
             dry_run: Annotated[bool, Query(description="List what would change; change nothing.")] = False,
             allow_deletes: Annotated[bool, Query(description="Delete beyond sources.max-delete-share.")] = False
             ) -> dict[str, Any]:
    book, source = _source(svc, principal, kb, name)
    wb = svc.workbench_of(kb)
    result = sync_source(wb.settings, book, source, wb.ingestor, dry_run=dry_run, allow_deletes=allow_deletes)
    if not dry_run:
        audit.record(svc, principal, "sources.sync", kb, source.name,
                     **{k: v for k, v in result.to_dict().items() if k in ("added", "replaced", "deleted", "failed")})
    return result.to_dict()


@router.patch("/kbs/{kb}/sources/{name}", summary="Change a source's schedule (as `sources set --every`)")
def change_source(kb: str, name: str, body: SourceChange, svc: ServiceDep, principal: Admin) -> dict[str, Any]:
    book, source = _source(svc, principal, kb, name)
    changed = book.set_every(source, body.every)
    audit.record(svc, principal, "sources.set", kb, source.name, every=changed.every)
    return changed.to_dict()


@router.delete("/kbs/{kb}/sources/{name}", summary="Remove a source (as `sources remove`); its documents stay "
               "unless delete_documents")
def delete_source(kb: str, name: str, svc: ServiceDep, principal: Admin,
                  delete_documents: Annotated[bool, Query(description="Delete its documents too.")] = False
                  ) -> dict[str, Any]:
    book, source = _source(svc, principal, kb, name)
    wb = svc.workbench_of(kb)
    deleted = remove_source(book, source, store=wb.store, ingestor=wb.ingestor) if delete_documents else \
        remove_source(book, source)
    audit.record(svc, principal, "sources.remove", kb, source.name, documents_deleted=deleted)
    return {"removed": source.name, "documents_deleted": deleted}

"""`/v1`: the workbench's own routes. `/v1/search` answers exactly the object `search --json` prints (every raw
hit with its fate, the evidence, what was dropped and why, the agent's projection, timings); documents and
chunks as `docs --json` and the store list them. Errors: `{"error": {"code", "message"}}`.

`/v1/search` and `/v1/explain` take the conversation before the query as repeated `history` parameters, each
"user: ..." or "assistant: ...": a follow-up question is searched as the standalone question it means (the answer's
`rewrite`); one written otherwise is a 400 naming it."""

from __future__ import annotations

import inspect
import platform
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any

import anyio
import orjson
from fastapi import APIRouter, Depends, File, Form, Query, Request, UploadFile
from fastapi.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, Response

from .. import loaders, tracing
from ..access.checks import lookup_access
from ..access.records import Role
from ..bootstrap import Workbench
from ..errors import LoaderError, RagError
from ..identity import stored_chunks
from ..records import ConversationTurn
from ..retrieval.options import LOOKUP_OPTIONS, LookupOption, given, lookup_overrides
from ..retrieval.rewrite import parse_history
from ..store import is_lite
from . import audit
from .deps import ServiceDep, principal_of, reading, scope_for
from .errors import ApiError, refusal_status
from .models import ChunkChange, ChunkNew, ChunkOut, ChunksAnswer, DeletedAnswer, IngestAnswer, TagsBody
from .uploads import upload_name

router = APIRouter(prefix="/v1", tags=["native"])


@dataclass(frozen=True)
class LookupOptions:
    """The lookup's options as given in the query string (unset = the knowledge base's settings), and the
    conversation before the query (`history`)."""
    given: dict[str, Any]
    history: tuple[ConversationTurn, ...] = ()

    def arguments(self, wb: Workbench, request: Request) -> dict[str, Any]:
        """`lookup(...)` arguments over `wb`'s settings, by the same function as the CLI's options (so both
        answer alike), each value checked by the rules of the setting it overrides; and what the caller may
        retrieve."""
        return {**lookup_overrides(self.given, wb.settings), "history": self.history,
                **lookup_access(scope_for(request, wb.settings.kb_name))}


HISTORY = Query(description="An earlier message of the conversation, oldest first, written \"user: ...\" or "
                            "\"assistant: ...\" (repeatable): a follow-up question is searched as the standalone "
                            "question it means (the answer's `rewrite`).")


def _query_parameter(option: LookupOption) -> inspect.Parameter:
    """An option (retrieval.options) as a query parameter: its type, its setting's choices and range."""
    query = Query(description=option.description, ge=option.ge, le=option.le)
    return inspect.Parameter(option.surface_name, inspect.Parameter.KEYWORD_ONLY,
                             default=False if option.flag else None, annotation=Annotated[option.annotation, query])


def _options_dependency(explaining: bool) -> Callable[..., Awaitable[LookupOptions]]:
    """The FastAPI dependency reading the options of `/v1/search` (or of `/v1/explain`) from the query string."""
    async def read(history: list[str] | None = None, **parameters: Any) -> LookupOptions:  # async: pure parsing
        return LookupOptions(given(parameters), parse_history(history or ()))

    history = inspect.Parameter("history", inspect.Parameter.KEYWORD_ONLY, default=None,
                                annotation=Annotated[list[str] | None, HISTORY])
    read.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [_query_parameter(o) for o in LOOKUP_OPTIONS if o.explain or not explaining] + [history],
        return_annotation=LookupOptions)
    return read


search_options, explain_options = _options_dependency(False), _options_dependency(True)


def kb_routes(router: APIRouter, prefix: str, where: str) -> None:
    """Search and documents routes on the knowledge base named in the query string (`where` = "query") or the
    path ("path"), under `prefix`, each with the role it needs there (deps.reading)."""
    # Defaults, not Annotated aliases: these annotations are strings, read in the module's namespace.
    reader, editor = Depends(reading(Role.READER, where)), Depends(reading(Role.EDITOR, where))
    where = "the knowledge base" if not prefix else "knowledge base {kb}"

    @router.get(f"{prefix}/search", summary=f"The lookup path on {where}: every hit's fate, the evidence, the "
                "agent's projection")
    async def search(query: Annotated[str, Query(description="What to look for.")],
                     options: Annotated[LookupOptions, Depends(search_options)],
                     svc: ServiceDep, request: Request, wb: Workbench = reader) -> Response:
        """Exactly what `python -m rag_core search QUERY --json` prints (same keys, same values; only the
        timings differ). Unset parameters take the knowledge base's settings."""
        arguments = options.arguments(wb, request)

        def answer() -> Response:
            result = wb.retriever.lookup(query, **arguments)
            # Already plain JSON types, so no jsonable_encoder walk (~1 ms of a 28 KB answer); orjson (pymilvus's
            # own dependency) writes the same bytes as JSONResponse's json.dumps in 0.05 ms instead of 0.24 (issue 28).
            return Response(orjson.dumps(result.to_dict()), media_type="application/json")

        # One first-come-first-served queue for every knowledge base's lookups (state.lookup_thread_count).
        return await anyio.to_thread.run_sync(answer, limiter=svc.lookup_threads)

    @router.get(f"{prefix}/explain", summary=f"Why wasn't it retrieved? The fate of an expected document, chunk or "
                f"answer in {where}")
    def explain(query: Annotated[str, Query(description="The question.")], request: Request,
                options: Annotated[LookupOptions, Depends(explain_options)],
                expect: Annotated[str | None, Query(description="The expected document `doc_id`, one chunk "
                                                                "`doc_id#chunk-N`, or any chunk of a block's range "
                                                                "`doc_id#chunk-3..5`.")] = None,
                answer: Annotated[str | None, Query(description="An expected answer text: which chunks hold it, "
                                                                "and whether a chunk boundary splits it.")] = None,
                wb: Workbench = reader) -> JSONResponse:
        """Exactly what `python -m rag_core explain QUERY --expect ... --json` prints: each chunk's rank in every
        channel over the whole knowledge base, what cut it, and the smallest change that brings it in."""
        from ..retrieval.explain import explain_dict

        return JSONResponse(explain_dict(wb, query, expect, answer, **options.arguments(wb, request)))

    @router.get(f"{prefix}/documents", summary=f"Documents of {where} (as `docs --json`)")
    def list_documents(request: Request, wb: Workbench = reader) -> list[dict[str, Any]]:
        """The documents you may retrieve (a document whose access groups are none of yours is not listed); an
        admin of the knowledge base gets every one, with its `access_groups`."""
        return wb.documents_json(scope_for(request, wb.settings.kb_name))

    @router.post(f"{prefix}/documents", response_model=IngestAnswer,
                 summary=f"Index several files into {where} (multipart `files`)",
                 responses={207: {"model": IngestAnswer, "description": "Some files failed"}, 409: {}, 413: {},
                            415: {}, 422: {}})
    async def add_documents(request: Request,
                            files: Annotated[list[UploadFile], File(description="One or more files.")],
                            folder: Annotated[str, Form(max_length=1000)] = "",
                            force: Annotated[bool, Form()] = False, wb: Workbench = editor) -> JSONResponse:
        """The upload page's ingest for each file (doc_id = `folder/name`). 200 when every file was added,
        replaced or unchanged; 207 when some failed (each report has its `error`, `error_code` and the
        `http_status` it would have alone); when all failed, the first failure's status (413/415/422/400).
        A replaced or unchanged file's `diff` counts its chunks added, removed and unchanged (by content) and
        lists the added and removed ones."""
        uploads = [(upload_name(f), await f.read()) for f in files]
        _refuse_duplicates([name for name, _ in uploads], folder)
        reports = await run_in_threadpool(wb.ingestor.ingest_uploads, uploads, prefix=folder, force=force)
        await run_in_threadpool(_record_uploads, request, wb, reports)
        out = []
        for r in reports:
            row = r.to_dict()
            row["http_status"] = refusal_status(row["error_code"]) if r.status == "failed" else 200
            out.append(row)
        counts = {s: sum(r.status == s for r in reports) for s in ("added", "replaced", "unchanged", "failed")}
        body = IngestAnswer.model_validate({"reports": out, "counts": counts}).model_dump()
        failed = [row for row in out if row["status"] == "failed"]
        if failed and len(failed) == len(out):
            first = failed[0]
            raise ApiError(first["http_status"], first["error_code"] or "refused", first["error"], body)
        return JSONResponse(body, status_code=207 if failed else 200)

    @router.get(f"{prefix}/documents/{{doc_id:path}}/chunks", response_model=ChunksAnswer,
                summary=f"A document's chunks in order (its active version) in {where}")
    def document_chunks(doc_id: str, request: Request, wb: Workbench = reader) -> ChunksAnswer:
        """doc_ids contain slashes: `.../documents/runbooks/cpu_high.md/chunks`. A document you may not retrieve
        (access groups) is answered as an unknown one."""
        doc_id = _doc_id(wb, doc_id)
        rows = wb.store.get_chunks(doc_id)
        if not rows or not wb.shows(scope_for(request, wb.settings.kb_name), doc_id):
            raise ApiError(404, "not_found", f"No document {doc_id!r} in the knowledge base (GET .../documents "
                           "lists them).")
        chunks = [ChunkOut(**c) for c in stored_chunks(doc_id, rows)]
        return ChunksAnswer(doc_id=doc_id, version=rows[0].version, chunks=chunks)

    @router.get(f"{prefix}/metadata", summary=f"Every document's metadata in {where}, and the filter keys")
    def list_metadata(request: Request, wb: Workbench = reader) -> dict[str, Any]:
        """What `filter=key=value` can select: `keys` (built-in: folder, type, ingested; then front-matter and tag
        keys) and the values of each document you may retrieve."""
        from ..kb.tags import filter_keys, metadata

        shown = {d.doc_id for d, _ in wb.listed_documents(scope_for(request, wb.settings.kb_name))}
        return {"keys": list(filter_keys(wb.store)),
                "documents": {d: v for d, v in metadata(wb.store).items() if d in shown}}

    @router.post(f"{prefix}/documents/{{doc_id:path}}/tags", summary=f"Set a document's tags in {where}")
    def set_tags(doc_id: str, body: TagsBody, request: Request, wb: Workbench = editor) -> dict[str, Any]:
        """`{"tags": {"team": ["sre"], "owner": []}}` adds team=sre and removes owner; `"replace": true` makes
        them all its tags. Answers the document's metadata (as `tag DOC --json`)."""
        from ..kb.tags import metadata, tag

        doc_id = _doc_id(wb, doc_id)
        # NotIndexed: 404, InvalidTags: 400 (service/errors.py)
        tags = {k: list(v) for k, v in body.tags.items()}
        tag(wb.store, doc_id, tags, replace=body.replace)
        _record(request, "tags.set", wb, doc_id, tags=tags, replace=body.replace)
        return {"doc_id": doc_id, "metadata": metadata(wb.store)[doc_id]}

    @router.get(f"{prefix}/documents/{{doc_id:path}}/chunks/conflicts",
                summary=f"The edits of a document a re-upload left in conflict in {where}")
    def chunk_conflicts(doc_id: str, wb: Workbench = reader) -> dict[str, Any]:
        """The edits that stopped applying when a changed original was re-uploaded (as `chunks conflicts DOC_ID
        --json`): each with its kind (edited, disabled, added), its text, keywords and questions, and the chunk now
        under its key (`now`, null when the document no longer has it). Settle one with `PATCH
        .../chunks/{n}` `{"conflict": "keep"}` or `{"conflict": "drop"}`."""
        from ..kb.chunk_edits import conflicts

        doc_id = _doc_id(wb, doc_id)
        return {"doc_id": doc_id, "conflicts": conflicts(wb.store, doc_id)}

    @router.post(f"{prefix}/documents/{{doc_id:path}}/chunks", summary=f"Add a chunk to a document in {where}")
    def add_chunk(doc_id: str, body: ChunkNew, request: Request, wb: Workbench = editor) -> dict[str, Any]:
        """`{"text": "...", "keywords": [...], "questions": [...]}`: a chunk added under the document's next free
        chunk index, embedded and indexed (BM25 too); hits mark it `edited` and `added`. Answers its record with its
        evidence key and history (who: the user, "api" without users), as `chunks add DOC_ID --text ... --json`."""
        from ..kb.chunk_edits import add_chunk

        principal = principal_of(request)
        doc_id = _doc_id(wb, doc_id)
        record = add_chunk(wb.store, wb.embedder, doc_id, body.text or "", keywords=body.keywords,
                           questions=body.questions, who=audit.who(principal))
        _record(request, "chunks.add", wb, str(record.get("evidence_key") or doc_id))
        return record

    @router.patch(f"{prefix}/documents/{{doc_id:path}}/chunks/{{chunk_index}}",
                  summary=f"Disable or enable a chunk of a document in {where}")
    def change_chunk(doc_id: str, chunk_index: int, body: ChunkChange, request: Request,
                     wb: Workbench = editor) -> dict[str, Any]:
        """`{"disabled": true}` leaves the chunk out of every lookup (a drop with reason `disabled`); false brings
        it back. `text`, `keywords`, `questions` edit it (only it is re-embedded; its evidence key stays; hits mark
        it `edited`). `{"conflict": "keep"}` / `"drop"` settles an edit a re-upload left in conflict (GET
        .../chunks/conflicts lists them). Answers its record with its history (who: the user, "api" without
        users)."""
        from ..kb.chunk_edits import drop, edit_chunk, keep, set_disabled

        name = audit.who(principal_of(request))
        key = f"{_doc_id(wb, doc_id)}#chunk-{chunk_index}"
        record: dict[str, Any] = {}
        if body.conflict is not None:
            if body.text is not None or body.keywords is not None or body.questions is not None or body.disabled \
                    is not None:
                raise ApiError(400, "bad_request", "Settle a conflict alone: give only conflict (keep or drop).")
            record = keep(wb.store, wb.embedder, key, who=name) if body.conflict == "keep" else drop(wb.store, key,
                                                                                                     who=name)
            _record(request, "chunks.edit", wb, key, conflict=body.conflict)
            return record
        if body.text is not None or body.keywords is not None or body.questions is not None:
            record = edit_chunk(wb.store, wb.embedder, key, text=body.text, keywords=body.keywords,
                                questions=body.questions, who=name)
        if body.disabled is not None:
            record = set_disabled(wb.store, key, body.disabled, who=name)
        if not record:
            raise ApiError(400, "bad_request", "Nothing to change: give disabled, text, keywords, questions or "
                           "conflict.")
        changed = [f for f in ("text", "keywords", "questions", "disabled") if getattr(body, f) is not None]
        _record(request, "chunks.edit", wb, key, changed=changed)
        return record

    @router.delete(f"{prefix}/documents/{{doc_id:path}}", response_model=DeletedAnswer,
                   summary=f"Remove a document from {where}")
    def delete_document(doc_id: str, request: Request, wb: Workbench = editor) -> DeletedAnswer:
        """Its chunks, its registry entry and its kept original. doc_ids contain slashes:
        `DELETE .../documents/runbooks/cpu_high.md`."""
        doc_id = _doc_id(wb, doc_id)
        if not wb.ingestor.delete(doc_id):
            raise ApiError(404, "not_found", f"No document {doc_id!r} in the knowledge base (GET .../documents "
                           "lists them).")
        _record(request, "documents.delete", wb, doc_id)
        return DeletedAnswer(deleted=doc_id)


kb_routes(router, "", "query")


def _record(request: Request, action: str, wb: Workbench, target: str, **detail: Any) -> None:
    audit.record(request.app.state.service, principal_of(request), action, wb.settings.kb_name, target, **detail)


def _record_uploads(request: Request, wb: Workbench, reports: list[Any]) -> None:
    for r in reports:
        if r.status in ("added", "replaced"):
            _record(request, "documents.upload", wb, r.doc_id, status=r.status, chunks=r.chunks)


def _refuse_duplicates(names: list[str], folder: str) -> None:
    seen: dict[str, str] = {}
    for name in names:
        try:
            doc_id = loaders.normalize_doc_id(f"{folder.strip().strip('/')}/{name}" if folder.strip() else name)
        except LoaderError:
            continue  # reported per file by the ingest
        if doc_id in seen:
            raise ApiError(409, "conflict", f"Two files in this request name the same document {doc_id!r} "
                           f"({seen[doc_id]!r} and {name!r}); send them in separate requests.")
        seen[doc_id] = name


def _doc_id(wb: Workbench, raw: str) -> str:
    """The document `raw` names: itself when one has exactly that id (one indexed under an earlier release's rule
    keeps it, see doc_ids), else its canonical spelling."""
    try:
        loaders.normalize_doc_id(raw)  # a name ingest refuses (`..`, a NUL) never reaches the store
        return wb.ingestor.resolve_doc_id(raw)
    except LoaderError as exc:
        raise ApiError(400, "bad_request", str(exc)) from None


@router.get("/health", summary="Store, embedder, chat mode, versions (no token needed)")
def health(svc: ServiceDep) -> JSONResponse:
    """200 when the store answers, 503 (with the reason) when it does not. Shows no paths or secrets."""
    wb = svc.workbench
    store: dict[str, Any] = {"kind": "milvus-lite" if is_lite(wb.settings.milvus_uri) else "milvus-server",
                             "collection": wb.settings["milvus.collection"]}
    status = 200
    try:
        docs = wb.store.list_documents()
        store.update(ok=True, documents=len(docs), chunks=sum(d.chunks for d in docs))
    except RagError as exc:
        store.update(ok=False, error=str(exc))
        status = 503
    except Exception:  # noqa: BLE001 - health must answer, whatever the store does
        store.update(ok=False, error="The store did not answer; see the server log.")
        status = 503
    body = {
        "status": "ok" if status == 200 else "unavailable",
        "store": store,
        "embedder": {"name": wb.embedder.name, "dim": wb.embedder.dim},
        "reranker": _reranker_health(wb),
        "chat": {"mode": svc.agent.mode, "model": svc.agent.describe()},
        "auth": svc.signs_in(),
        "sessions": len(svc.sessions),
        "active_streams": svc.streams.active,
        "tracing": tracing.stats(),  # spans exported, and lost to a slow or down collector
        "versions": _versions(),
    }
    return JSONResponse(body, status_code=status)


def _reranker_health(wb: Workbench) -> dict[str, Any] | None:
    """The default knowledge base's reranker and its circuit (rerank.circuit): "open" while searches skip it.
    An open circuit does not make the service unhealthy: searches answer, in the fused order."""
    reranker = wb.retriever.reranker
    if reranker is None:
        return None
    return {"name": reranker.name, **reranker.state().to_dict()}


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in ("rag-workbench", "pymilvus", "milvus-lite", "fastapi", "uvicorn"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out

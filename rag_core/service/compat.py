"""`/api`: SuperBizAgent's routes, with its field names and envelope, over our ingest, lookup and agent.

A front end written for SuperBizAgent works unchanged: chat (`success`/`answer`/`errorMessage`), the SSE
chat stream (content/error/done), session clear and info, upload, and AI Ops. What we add (citations,
tool calls, evidence, the ingest report) sits in extra fields and extra event types it can ignore.
"""

from __future__ import annotations

import logging
from typing import Annotated

import anyio
from fastapi import APIRouter, Depends, File, Form, Header, Request, UploadFile
from fastapi.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, StreamingResponse

from ..access.records import Principal, Role
from ..agent.turn import AssistantTurn
from ..errors import for_client
from . import audit
from .deps import Needs, ServiceDep, hiding, kb_in_form, kb_in_json, turn_scope
from .errors import ApiError, error_response, refusal_status
from .models import ChatAnswer, ChatRequest, ClearRequest, Envelope, HistoryPair, SessionInfo, ToolCallInfo, UploadInfo
from .sessions import DEFAULT_USER
from .streaming import ClientGone, collect, sse
from .uploads import upload_name

log = logging.getLogger(__name__)

router = APIRouter(prefix="/api", tags=["SuperBizAgent compatible"])

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}  # no proxy buffering of the stream
CHAT_RETRY_AFTER_S = 5  # a busy server's hint: turns take seconds
CLIENT_GONE = 499  # nginx's "client closed request": never read (nobody is there), but logged by status


# The knowledge base a chat turn searches: the body's `kb` (under any of ChatRequest's names for it).
KB_IN_CHAT = kb_in_json("kb", "Kb", "KnowledgeBase", "knowledgeBase")
Reader = Annotated[Principal, Depends(Needs(Role.READER, KB_IN_CHAT))]
Caller = Annotated[Principal, Depends(Needs(None))]


MISSING_SESSION = ("beyond api.max-sessions the least recently used goes, and a single API process forgets them "
                   "when it restarts")


def _user(principal: Principal, body_user: str | None, header_user: str | None) -> str:
    """Whose sessions these are: a signed-in user's own (whatever UserId or X-User-Id say: one user cannot read
    another's session); in the one-person setup (or with RAG_API_TOKEN) the free UserId / X-User-Id, as before."""
    if not principal.everything:
        return f"user:{principal.name}"
    return (header_user or body_user or "").strip() or DEFAULT_USER


def _session_id(raw: str | None) -> str | None:
    return (raw or "").strip() or None


def chat_answer(turn: AssistantTurn, session_id: str) -> ChatAnswer:
    tools = [ToolCallInfo(name=s.name, arguments=s.arguments, ok=s.ok, error=s.error, seconds=s.seconds,
                          evidenceKeys=[p["document_id"] for p in (s.lookup or {}).get("projection", [])],
                          rewrite=(s.lookup or {}).get("rewrite"))
             for s in turn.tools()]
    ok = turn.error is None
    # A failed turn keeps whatever text streamed before the failure (None when there was none).
    answer = turn.text if ok else (turn.text or None)
    return ChatAnswer(success=ok, answer=answer, errorMessage=for_client(turn.error) if turn.error else None,
                      sessionId=session_id, mode=turn.mode, citations=list(turn.citations),
                      unverifiedCitations=list(turn.unverified), toolCalls=tools,
                      evidence=list(turn.evidence().values()), notices=list(turn.notices), traceId=turn.trace_id,
                      turnIndex=turn.turn_index)


@router.post("/chat", response_model=Envelope[ChatAnswer], summary="Ask the agent; the whole answer at once",
             responses={503: {"description": "api.chat-turns turns are running; try again after Retry-After"}})
async def chat(body: ChatRequest, request: Request, svc: ServiceDep, principal: Reader,
               x_user_id: Annotated[str | None, Header()] = None) -> Envelope[ChatAnswer] | JSONResponse:
    """SuperBizAgent's `/api/chat`. An empty question or a failed turn answers `success: false` with
    `errorMessage` (HTTP 200, as the seed does); `data` also lists citations, tool calls and evidence. At most
    api.chat-turns turns run at once: beyond, 503 with Retry-After. When the client disconnects, the turn stops
    and is not recorded."""
    if not svc.chat_turns.enter():  # refused at once: a queue of turns would hold connections without bound
        return error_response(request.url.path, 503, "busy", f"{svc.chat_turns.limit} chat turns are running "
                              f"(api.chat-turns); try again in {CHAT_RETRY_AFTER_S} s.",
                              headers={"Retry-After": str(CHAT_RETRY_AFTER_S)})
    try:
        agent = await anyio.to_thread.run_sync(hiding, svc, principal, svc.agent_of, body.kb,
                                               limiter=svc.chat_threads)
        # In a thread: with several workers the session is read from the database.
        session = await anyio.to_thread.run_sync(svc.sessions.get_or_create, _user(principal, body.user_id, x_user_id),
                                                 _session_id(body.id), limiter=svc.chat_threads)
        events = await collect(agent.run(body.question or "", session, access=turn_scope(svc, principal, body.kb),
                                         user=principal.name), request.receive, svc.chat_threads)
    except ClientGone:
        log.info("a chat turn was stopped: its client disconnected")
        return error_response(request.url.path, CLIENT_GONE, "client_gone", "The client disconnected; the turn "
                              "was stopped.")
    finally:
        svc.chat_turns.leave()
    return Envelope[ChatAnswer](data=chat_answer(AssistantTurn.from_events(events), session.id))


@router.post("/chat_stream", summary="Ask the agent; the answer as server-sent events",
             responses={200: {"content": {"text/event-stream": {}},
                              "description": "`data: {\"type\": \"content\"|\"error\"|\"done\"|..., \"data\": ...}`"}})
async def chat_stream(body: ChatRequest, svc: ServiceDep, principal: Reader,
                      x_user_id: Annotated[str | None, Header()] = None) -> StreamingResponse:
    """SuperBizAgent's `/api/chat_stream`: `content` pieces, then `done`; `error` (then `done`) on failure.
    Extra event types: `session`, `tool_call`, `tool_result`, `notice`, `citations`. When the client
    disconnects, the agent turn stops."""
    agent = hiding(svc, principal, svc.agent_of, body.kb)
    session = await run_in_threadpool(svc.sessions.get_or_create, _user(principal, body.user_id, x_user_id),
                                      _session_id(body.id))  # with several workers: read from the database
    # a generator: nothing runs before the first pull
    events = agent.run(body.question or "", session, access=turn_scope(svc, principal, body.kb), user=principal.name)
    stream = sse(events, first=[{"type": "session", "data": {"id": session.id, "mode": agent.mode}}],
                 on_open=svc.streams.opened, on_close=svc.streams.closed, limiter=svc.stream_threads)
    return StreamingResponse(stream, media_type="text/event-stream; charset=utf-8", headers=SSE_HEADERS)


@router.post("/chat/clear", response_model=Envelope[str], summary="Forget a session's history")
def clear(body: ClearRequest, svc: ServiceDep, principal: Caller,
          x_user_id: Annotated[str | None, Header()] = None) -> Envelope[str]:
    sid = _session_id(body.id)
    if sid is None:
        raise ApiError(400, "bad_request", "Id is required: the session whose history to clear.")
    session = svc.sessions.get(_user(principal, body.user_id, x_user_id), sid)
    if session is None:
        raise ApiError(404, "not_found", f"No session {sid!r} (or it was dropped: {MISSING_SESSION}).")
    session.clear()
    return Envelope[str](data="history cleared")


@router.get("/chat/session/{session_id}", response_model=Envelope[SessionInfo], summary="A session's history")
def session_info(session_id: str, svc: ServiceDep, principal: Caller,
                 x_user_id: Annotated[str | None, Header()] = None) -> Envelope[SessionInfo]:
    """SuperBizAgent's session info (`sessionId`, `messagePairCount`, `createTime`) plus the kept pairs
    (the last chat.history-pairs, as sent to the model)."""
    session = svc.sessions.get(_user(principal, None, x_user_id), session_id)
    if session is None:
        raise ApiError(404, "not_found", f"No session {session_id!r} (or it was dropped: {MISSING_SESSION}).")
    turns = session.snapshot()
    history = [HistoryPair(question=t.question, answer=t.answer, citations=list(t.citations), createdAt=t.created_at)
               for t in turns]
    return Envelope[SessionInfo](data=SessionInfo(sessionId=session.id, messagePairCount=len(turns),
                                            createTime=session.created_ms, history=history))


@router.post("/upload", response_model=Envelope[UploadInfo], summary="Index one file (multipart `file`)",
             responses={400: {}, 413: {}, 415: {}, 422: {}})
async def upload(svc: ServiceDep, principal: Annotated[Principal, Depends(Needs(Role.EDITOR, kb_in_form("kb")))],
                 file: Annotated[UploadFile, File()],
                 folder: Annotated[str, Form(max_length=1000)] = "",
                 kb: Annotated[str, Form(max_length=300, description="The knowledge base (default: the default "
                                                                     "one); not in SuperBizAgent")] = ""
                 ) -> Envelope[UploadInfo]:
    """The upload page's ingest: doc_id = `folder/file name` (the same rules as a folder ingest), versioned
    swap, original kept. A refused file answers its status (413 too large or too slow to read, 415 unsupported,
    binary or needing the OCR extra, 422 undecodable, empty or a bomb, 400 bad name) with `code` equal to it and the
    reason in `message`."""
    name = upload_name(file)  # a Windows path as sent, refused below (python-multipart cuts it: uploads.py)
    data = await file.read()
    wb = await run_in_threadpool(hiding, svc, principal, svc.workbench_of, kb or None)
    reports = await run_in_threadpool(wb.ingestor.ingest_uploads, [(name, data)], prefix=folder)
    report = reports[0]
    if report.status in ("added", "replaced"):
        await run_in_threadpool(audit.record, svc, principal, "documents.upload", wb.settings.kb_name, report.doc_id,
                                status=report.status, chunks=report.chunks)
    if report.status == "failed":
        code = getattr(report, "error_code", "")
        raise ApiError(refusal_status(code), code or "refused", report.error,
                       {"fileName": name, "fileSize": len(data), "docId": report.doc_id, "errorCode": code})
    return Envelope[UploadInfo](data=UploadInfo(fileName=name, filePath=report.doc_id, fileSize=len(data),
                                          docId=report.doc_id, status=report.status, chunks=report.chunks,
                                          seconds=round(report.seconds, 3), knowledgeBase=wb.settings.kb_name,
                                          diff=report.diff.to_dict() if report.diff is not None else None,
                                          notes=list(report.notes)))


@router.post("/ai_ops", summary="Alert triage as server-sent events",
             responses={200: {"content": {"text/event-stream": {}}}})
async def ai_ops(svc: ServiceDep, principal: Annotated[Principal, Depends(Needs(Role.READER))]) -> StreamingResponse:
    """SuperBizAgent's AI Ops: the firing alerts from Prometheus, for each the runbooks from the knowledge base
    (and its recent logs from Loki when logs.loki-url is set), then a Markdown report citing evidence keys, streamed
    like `/api/chat_stream`. Without prometheus.url: one `error` event. Without a chat model the report is
    extractive and says so. The request body, if any, is ignored."""
    from ..bootstrap import build_triage

    triage = build_triage(svc.workbench, svc.agent.model, svc.env)
    stream = sse(triage.run(principal.name), on_open=svc.streams.opened, on_close=svc.streams.closed,
                 limiter=svc.stream_threads)
    return StreamingResponse(stream, media_type="text/event-stream; charset=utf-8", headers=SSE_HEADERS)

"""`/v1/chat/completions` and `/v1/models`: the agent behind OpenAI's chat API, so any OpenAI client (the `openai`
SDK, Open WebUI, Chatbox, LibreChat) chats with it. A model is a knowledge base: `"model": "biz"` runs the agent
over knowledge base `biz`, with the same turn as `/api/chat` (its tools, its chat model, or offline mode without
one; chat.max-steps, chat.deadline, the limits on turns at once).

- The conversation is the request's `messages`: the last one is the question (a `user` message); the `user` and
  `assistant` messages before it are the history (the last chat.history-pairs pairs, as a session's would be);
  `system` messages are added to the agent's own instructions. Nothing is kept on the server between requests.
- The agent's tools are its own (the knowledge base, the clock, ...), never the client's: a request with
  `tools` or `functions` (or a `tool` message) is refused with 400 rather than answered as if they were
  called.
- The answer cites evidence keys in its text (`[runbooks/disk_full.md#chunk-2]`); `citations` (the keys, in
  order), `evidence` (their blocks) and `trace_id` (the turn's trace, by which `/api/feedback` rates it) are extra
  fields of the response, and of the last chunk when streamed, which OpenAI clients ignore. `usage` holds the
  turn's tokens over all its model calls: the chat model's own counts, else (a model that reports none, offline
  mode) counts made with the bundled Qwen tokenizer; `usage.counted_by` says which. Streamed, they come when the
  request asks with `stream_options: {"include_usage": true}`, in a last chunk with no choices, as OpenAI's.
- Sampling options (`temperature`, `top_p`, `max_tokens`, ...) are checked as OpenAI checks them (a wrong type or
  range is a 400 naming the field) and then left to the chat.* settings.
- Errors have OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`: 404 `model_not_found`, 400
  for a body that is not a chat request, 503 when api.chat-turns turns run; a failed turn is 502 (504 when
  it ran out of time). Streamed, a failed turn sends one `{"error": ...}` chunk, then `data: [DONE]`.
"""

from __future__ import annotations

import copy
import logging
import time
import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Annotated, Any, Literal

import anyio
from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, ValidationError
from starlette.responses import JSONResponse, Response, StreamingResponse

from ..access.records import AccessScope, Principal, Role
from ..agent.events import ContentEvent, DoneEvent, ErrorEvent, Event, NoticeEvent
from ..agent.session import Session
from ..agent.turn import AssistantTurn
from ..errors import NotFound, RagError, for_client
from ..text import check_texts
from .compat import CHAT_RETRY_AFTER_S, CLIENT_GONE, SSE_HEADERS
from .deps import Needs, ServiceDep, hiding, kb_in_json, readable, turn_scope
from .errors import from_rag_error, validation_message
from .state import Service
from .streaming import ClientGone, collect, sse

log = logging.getLogger(__name__)

router = APIRouter(prefix="/v1", tags=["OpenAI compatible"])

OWNER = "rag-workbench"
END = b"data: [DONE]\n\n"
# A failed turn's ErrorEvent.kind -> (HTTP status, OpenAI error type).
TURN_FAILURES = {"question": (400, "invalid_request_error"), "internal": (500, "server_error"),
                 "timeout": (504, "timeout")}


class Message(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[dict[str, Any]] | None = None


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    include_usage: StrictBool = False


class ChatCompletionRequest(BaseModel):
    """OpenAI's chat request. The sampling options are checked as OpenAI checks them (types and ranges) and left to
    the chat.* settings; other fields it has that are not here (`user`, `metadata`, ...) are accepted."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1, max_length=300)
    messages: list[Message] = Field(min_length=1)
    stream: bool = Field(False, strict=True)
    stream_options: StreamOptions | None = None
    n: int = Field(1, strict=True)
    tools: list[Any] | None = None
    functions: list[Any] | None = None
    temperature: float | None = Field(None, ge=0, le=2, strict=True)
    top_p: float | None = Field(None, ge=0, le=1, strict=True)
    max_tokens: int | None = Field(None, ge=1, strict=True)
    max_completion_tokens: int | None = Field(None, ge=1, strict=True)
    presence_penalty: float | None = Field(None, ge=-2, le=2, strict=True)
    frequency_penalty: float | None = Field(None, ge=-2, le=2, strict=True)
    seed: int | None = Field(None, strict=True)
    stop: StrictStr | list[StrictStr] | None = None
    logprobs: bool | None = Field(None, strict=True)


def openai_error(status: int, message: str, kind: str = "invalid_request_error", code: str | None = None,
                 param: str | None = None, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "param": param, "code": code}},
                        status_code=status, headers=headers)


class Refused(Exception):
    def __init__(self, response: JSONResponse) -> None:
        self.response = response


# ---------------------------------------------------------------------------------------- /v1/models
def _model(kb: Any) -> dict[str, Any]:
    try:
        created = int(datetime.fromisoformat(kb.created_at).timestamp()) if kb.created_at else 0
    except ValueError:
        created = 0
    return {"id": kb.name, "object": "model", "created": created, "owned_by": OWNER}


async def model_in_path(request: Request) -> str | None:
    return request.path_params.get("model") or None


@router.get("/models", summary="The knowledge bases you may read as OpenAI models (`model` of /v1/chat/completions)")
def list_models(svc: ServiceDep, principal: Annotated[Principal, Depends(Needs(None))]) -> dict[str, Any]:
    kbs = _manager(svc)
    return {"object": "list", "data": [_model(kbs.get(name)) for name in readable(svc, principal, kbs.names())]}


@router.get("/models/{model}", summary="One knowledge base as an OpenAI model", response_model=None)
def get_model(model: str, svc: ServiceDep,
              principal: Annotated[Principal, Depends(Needs(Role.READER, model_in_path))]
              ) -> dict[str, Any] | JSONResponse:
    try:
        return _model(hiding(svc, principal, _manager(svc).get, model))
    except RagError as exc:
        return rag_refusal(exc, "model")


def _manager(svc: Service) -> Any:
    if svc.kbs is None:
        raise RuntimeError("the service has no knowledge bases pool")
    return svc.kbs.manager


def is_openai(path: str) -> bool:
    """The routes answering errors in OpenAI's shape (a role check's 404 and 403 too: app.py)."""
    return path.startswith(("/v1/models", "/v1/chat/completions"))


def rag_refusal(exc: RagError, param: str | None = None) -> JSONResponse:
    if isinstance(exc, NotFound):
        return openai_error(404, f"{for_client(str(exc))} Each model is a knowledge base: GET /v1/models lists them.",
                            code="model_not_found", param=param)
    err = from_rag_error(exc)
    return openai_error(err.status, err.message, "invalid_request_error" if err.status < 500 else "server_error",
                        err.code, param)


# ---------------------------------------------------------------------------------------- the request
def _text(message: Message, index: int) -> str:
    """A message's text: a string, or the text parts of a list of parts (images and audio are refused)."""
    if message.content is None or isinstance(message.content, str):
        return message.content or ""
    texts = []
    for part in message.content:
        if part.get("type") != "text" or not isinstance(part.get("text"), str):
            raise Refused(openai_error(400, f"messages[{index}]: only text content is supported (a part of type "
                                       f"{part.get('type')!r} was sent).", param=f"messages[{index}].content",
                                       code="unsupported_content"))
        texts.append(part["text"])
    return "\n".join(texts)


class History(Session):
    """The conversation the client sent, as the session the agent reads its history from (never stored)."""

    def __init__(self, messages: list[dict[str, Any]]) -> None:
        super().__init__()
        self.messages = messages

    def history_messages(self, pairs: int) -> list[dict[str, Any]]:
        return self.messages[-2 * pairs:] if pairs > 0 else []


def conversation(body: ChatCompletionRequest) -> tuple[str, list[str], History]:
    """(question, the client's system instructions, the history before the question)."""
    if body.tools or body.functions:
        field = "tools" if body.tools else "functions"
        raise Refused(openai_error(400, f"`{field}` is not supported: each model is an agent that runs its own "
                                   "tools over its knowledge base. Send the request without client-side tools.",
                                   param=field, code="unsupported_parameter"))
    if body.n != 1:
        raise Refused(openai_error(400, f"n = {body.n}: this server answers with one choice (n = 1).", param="n",
                                   code="unsupported_parameter"))
    system: list[str] = []
    history: list[dict[str, Any]] = []
    for i, message in enumerate(body.messages):
        if message.role in ("tool", "function") or message.tool_calls:
            raise Refused(openai_error(400, f"messages[{i}]: tool calls and tool results are not supported: the "
                                       "agent runs its own tools.", param=f"messages[{i}]",
                                       code="unsupported_parameter"))
        text = _text(message, i)
        if message.role in ("system", "developer"):
            if text.strip():
                system.append(text.strip())
        else:
            history.append({"role": message.role, "content": text})
    if not history or history[-1]["role"] != "user":
        raise Refused(openai_error(400, "The last message must be the question: a `user` message after any "
                                   "history.", param="messages"))
    return history[-1]["content"], system, History(history[:-1])


async def _parse(request: Request) -> ChatCompletionRequest:
    try:
        raw = await request.json()
    except (ValueError, UnicodeDecodeError):
        raise Refused(openai_error(400, "The body is not valid JSON: send a chat request, e.g. "
                                   '{"model": "biz", "messages": [{"role": "user", "content": "..."}]}.')) from None
    try:
        return ChatCompletionRequest.model_validate(check_texts(raw))
    except ValidationError as exc:
        errors = [dict(e) for e in exc.errors()]
        loc = exc.errors()[0]["loc"] if errors else ()
        param = str(loc[0]) if loc else None  # the request's field
        raise Refused(openai_error(400, validation_message(errors), param=param)) from None
    except RagError as exc:  # a lone surrogate in a string (rag_core.text)
        raise Refused(openai_error(400, str(exc))) from None


async def _agent(svc: Service, principal: Principal, body: ChatCompletionRequest, system: list[str],
                 limiter: anyio.CapacityLimiter) -> Any:
    """The agent of knowledge base `body.model` (opened in a worker thread), with the client's system messages
    after its own instructions (on a copy: the shared agent is left as it is)."""
    try:
        agent = await anyio.to_thread.run_sync(hiding, svc, principal, svc.agent_of, body.model, limiter=limiter)
    except RagError as exc:
        raise Refused(rag_refusal(exc, "model")) from None
    if system:
        agent = copy.copy(agent)
        agent.system_prompt = agent.system_prompt + "\n\nThe client's instructions:\n" + "\n\n".join(system)
    return agent


# ---------------------------------------------------------------------------------------- the answer
def _extras(turn_citations: Iterable[str], evidence: dict[str, dict[str, Any]], mode: str,
            trace_id: str) -> dict[str, Any]:
    keys = list(turn_citations)
    return {"citations": keys, "evidence": [evidence[k] for k in keys if k in evidence], "mode": mode,
            "trace_id": trace_id}


def _turn_failure(message: str, kind: str) -> tuple[int, dict[str, Any]]:
    status, error_type = TURN_FAILURES.get(kind, (502, "upstream_error"))
    return status, {"message": for_client(message), "type": error_type, "param": None, "code": kind}


def _inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """A model's JSON schema with its `$defs` put in place of their `$ref`s (a `#/$defs/...` reference would
    point at the root of the OpenAPI document)."""
    defs = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref.startswith("#/$defs/"):
                return inline(defs[ref.removeprefix("#/$defs/")])
            return {k: inline(v) for k, v in node.items()}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    return inline(schema)


@router.post("/chat/completions", summary="OpenAI's chat API: the agent over the knowledge base named by `model`",
             response_model=None,
             # The body is read by the route (its errors in OpenAI's shape, not FastAPI's): described here for /docs.
             openapi_extra={"requestBody": {"required": True, "content": {
                 "application/json": {"schema": _inlined(ChatCompletionRequest.model_json_schema())}}}},
             responses={200: {"content": {"text/event-stream": {}}, "description": "A chat.completion, or with "
                              "`stream: true` chat.completion.chunk events then `data: [DONE]`"},
                        400: {}, 404: {"description": "No such knowledge base"}, 503: {}})
async def chat_completions(request: Request, svc: ServiceDep,
                           principal: Annotated[Principal, Depends(Needs(Role.READER, kb_in_json("model")))]
                           ) -> Response:
    """The body is OpenAI's chat request (`model`, `messages`, `stream`); see the module's documentation in
    docs/api.md. Non-streamed turns count against api.chat-turns (503 beyond, with Retry-After), as /api/chat's."""
    try:
        body = await _parse(request)
        question, system, history = conversation(body)
        if body.stream:
            agent = await _agent(svc, principal, body, system, svc.stream_threads)
            usage = body.stream_options is not None and body.stream_options.include_usage
            return _stream(svc, agent, body.model, question, history, usage, turn_scope(svc, principal, body.model),
                           principal.name)
        if not svc.chat_turns.enter():  # refused at once: a queue of turns would hold connections without bound
            return openai_error(503, f"{svc.chat_turns.limit} chat turns are running (api.chat-turns); try again "
                                f"in {CHAT_RETRY_AFTER_S} s.", "server_error", "busy",
                                headers={"Retry-After": str(CHAT_RETRY_AFTER_S)})
        try:
            agent = await _agent(svc, principal, body, system, svc.chat_threads)
            events = await collect(agent.run(question, history, access=turn_scope(svc, principal, body.model),
                                             user=principal.name), request.receive, svc.chat_threads)
        finally:
            svc.chat_turns.leave()
    except Refused as refused:
        return refused.response
    except ClientGone:
        log.info("a chat completion was stopped: its client disconnected")
        return openai_error(CLIENT_GONE, "The client disconnected; the turn was stopped.", code="client_gone")
    return _completion(body.model, events)


def _completion(model: str, events: list[Event]) -> JSONResponse:
    turn = AssistantTurn.from_events(events)
    if turn.error is not None:
        kind = next((e.kind for e in events if isinstance(e, ErrorEvent)), "")
        status, error = _turn_failure(turn.error, kind)
        return JSONResponse({"error": error}, status_code=status)
    length = any(isinstance(e, NoticeEvent) and e.kind == "length" for e in events)
    return JSONResponse({
        "id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
        "model": model, "system_fingerprint": None,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": turn.text, "refusal": None},
                     "logprobs": None, "finish_reason": "length" if length else "stop"}],
        "usage": turn.usage,
        **_extras(turn.citations, turn.evidence(), turn.mode, turn.trace_id), "notices": turn.notices})


def _stream(svc: Service, agent: Any, model: str, question: str, history: History,
            usage: bool, access: AccessScope, user: str) -> StreamingResponse:
    """`usage`: the client asked for it (stream_options.include_usage): every chunk has `usage: null` and a last
    chunk without choices has the turn's usage, as OpenAI sends them. `access`: what the turn may retrieve; `user`:
    who asks (recorded with the turn)."""
    ident, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
    turn = AssistantTurn()  # folds the events as they pass, for the evidence the last chunk carries
    state = {"length": False}

    def chunk(delta: dict[str, Any] | None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
        choices = [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        return {"id": ident, "object": "chat.completion.chunk", "created": created, "model": model,
                "system_fingerprint": None, "choices": choices, **({"usage": None} if usage else {}), **extra}

    def encode(event: Event) -> list[dict[str, Any]]:
        turn.apply(event)
        if isinstance(event, ContentEvent):
            return [chunk({"content": event.text})]
        if isinstance(event, NoticeEvent) and event.kind == "length":
            state["length"] = True
        if isinstance(event, DoneEvent):
            last = chunk({}, "length" if state["length"] else "stop",
                         **_extras(event.citations, turn.evidence(), event.mode, event.trace_id))
            return [last, {**chunk(None), "usage": turn.usage}] if usage else [last]
        if isinstance(event, ErrorEvent):
            return [{"error": _turn_failure(event.message, event.kind)[1]}]
        return []  # tool calls and results are the agent's own, not the client's

    failure = {"error": {"message": "An unexpected error ended this stream; the details are in the server log.",
                         "type": "server_error", "param": None, "code": "internal"}}
    stream = sse(agent.run(question, history, access=access, user=user),
                 first=[chunk({"role": "assistant", "content": ""})], on_open=svc.streams.opened,
                 on_close=svc.streams.closed, limiter=svc.stream_threads,
                 encode=encode, failure=failure, closing=END)
    return StreamingResponse(stream, media_type="text/event-stream; charset=utf-8", headers=SSE_HEADERS)


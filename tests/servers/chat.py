"""Fake chat-completions services speaking the real wire protocol, for the real `openai` SDK:

* `OpenAIChatServer`: `POST /v1/chat/completions`, streamed as Server-Sent Events (`data: {chunk}\\n\\n` ...
  `data: [DONE]\\n\\n`) or as one JSON object when `stream` is false.
* `DashScopeChatServer`: DashScope's OpenAI-compatible mode, `POST /compatible-mode/v1/chat/completions`,
  with DashScope's habits: later tool-call fragments restate `"id": ""` and `"name": null`, errors carry a
  `request_id`, and a request whose earlier assistant tool call has arguments that are not JSON is refused.

Answers are scripted per test with `server.reply(...)`, one item per request, in order:

    server.reply(
        Completion.calls(tool_call("search_knowledge_base", {"query": "cpu"}, parts=4)),
        lambda req: Completion.say(f"Answer citing [{first_key(req)}]"),   # computed from the request
        server.rate_limited(retry_after="1"),                              # an HTTP error
    )

Requests are validated like the real services do (auth, model, message roles, every assistant tool call
answered by a tool message and no orphan tool messages) before a scripted answer is used, so a client bug
shows up as the same 400 a real server would give. Every request is recorded (`server.chat_requests()`).
With nothing scripted the server answers "OK".
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import FakeServer, RecordedRequest, Reply

__all__ = ["Completion", "DashScopeChatServer", "OpenAIChatServer", "ToolCallSpec", "paced", "split_text", "tool_call"]


USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


@dataclass(frozen=True)
class ToolCallSpec:
    name: str
    arguments: str  # raw text, streamed in `parts` fragments; need not be valid JSON
    id: str | None = None
    parts: int = 3


def tool_call(name: str, arguments: Mapping[str, Any] | str = "{}", *, id: str | None = None,  # noqa: A002
              parts: int = 3) -> ToolCallSpec:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return ToolCallSpec(name, raw, id, parts)


@dataclass(frozen=True)
class Completion:
    """One assistant reply: text (streamed in `text_parts` pieces) and/or tool calls.

    `interleave`: stream the fragments of several tool calls round-robin (as parallel calls arrive).
    `stream_error`: after the text, send an SSE `error` event instead of finishing (a failure mid-answer).
    """

    text: str = ""
    tool_calls: tuple[ToolCallSpec, ...] = ()
    text_parts: int = 4
    finish_reason: str | None = None
    interleave: bool = False
    stream_error: str | None = None

    @classmethod
    def say(cls, text: str, parts: int = 4, **kw: Any) -> Completion:
        return cls(text=text, text_parts=parts, **kw)

    @classmethod
    def calls(cls, *calls: ToolCallSpec, text: str = "", interleave: bool = False) -> Completion:
        return cls(text=text, tool_calls=tuple(calls), interleave=interleave)


Scripted = Completion | Reply | Callable[[RecordedRequest], "Completion | Reply"]


def split_text(text: str, parts: int) -> list[str]:
    """`text` in `parts` pieces, as the servers (and the scripted fake model) stream it."""
    if not text:
        return []
    parts = max(1, min(parts, len(text)))
    size = -(-len(text) // parts)
    return [text[i:i + size] for i in range(0, len(text), size)]


class OpenAIChatServer(FakeServer):
    PREFIX = "/v1"
    MODELS: tuple[str, ...] = ("test-chat",)
    name_with_first_piece = False  # OpenAI's first fragment has the name and empty arguments

    def __init__(self, api_key: str | None = "sk-chat-test", *, models: Sequence[str] | None = None) -> None:
        super().__init__()
        self.api_key = api_key  # None: no key needed (like local vLLM / Ollama / llama.cpp servers)
        self.models = tuple(models or self.MODELS)
        self._replies: list[Scripted] = []

    @property
    def base_url(self) -> str:
        return f"{self.url}{self.PREFIX}"

    @property
    def path(self) -> str:
        return f"{self.PREFIX}/chat/completions"

    def reply(self, *items: Scripted) -> OpenAIChatServer:
        with self._lock:
            self._replies.extend(items)
        return self

    def reset(self) -> None:
        super().reset()
        with self._lock:
            self._replies.clear()

    def chat_requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of the chat-completions requests received, in order."""
        return [r.json for r in self.requests if r.path.split("?")[0] == self.path]

    # -- errors in the provider's shape -------------------------------------------------------------
    def error(self, status: int, message: str, *, type: str = "invalid_request_error",  # noqa: A002
              code: str | None = None, headers: Mapping[str, str] | None = None, delay: float = 0.0) -> Reply:
        payload = {"error": {"message": message, "type": type, "param": None, "code": code}}
        return Reply.json(status, payload, headers={"x-request-id": f"req_{uuid.uuid4().hex}", **(headers or {})},
                          delay=delay)

    def rate_limited(self, retry_after: str | None = None) -> Reply:
        headers = {"Retry-After": retry_after} if retry_after is not None else None
        return self.error(429, "Rate limit reached for requests. Please try again in 1s.", type="requests",
                          code="rate_limit_exceeded", headers=headers)

    def server_error(self, status: int = 500) -> Reply:
        return self.error(status, "The server had an error while processing your request. Sorry about that!",
                          type="server_error")

    def bad_key(self, key: str) -> Reply:
        masked = f"{key[:3]}***{key[-3:]}" if len(key) > 8 else "***"
        return self.error(401, f"Incorrect API key provided: {masked}.", code="invalid_api_key")

    def no_key(self) -> Reply:
        return self.error(401, "You didn't provide an API key. You need to provide your API key in an "
                               "Authorization header using Bearer auth.")

    def no_model(self, model: str) -> Reply:
        return self.error(404, f"The model `{model}` does not exist or you do not have access to it.",
                          code="model_not_found")

    # -- protocol --------------------------------------------------------------------------------------
    def handle(self, request: RecordedRequest) -> Reply:
        if request.method != "POST" or request.path.split("?")[0] != self.path:
            return self.error(404, f"Invalid URL ({request.method} {request.path})")
        if self.api_key is not None:
            auth = request.header("authorization") or ""
            if not auth.startswith("Bearer "):
                return self.no_key()
            if auth[len("Bearer "):] != self.api_key:
                return self.bad_key(auth[len("Bearer "):])
        try:
            body = request.json
        except ValueError:
            return self.error(400, "We could not parse the JSON body of your request.")
        problem = self.validate(body)
        if problem is not None:
            return problem
        with self._lock:
            scripted = self._replies.pop(0) if self._replies else Completion.say("OK")
        if callable(scripted):
            scripted = scripted(request)
        if isinstance(scripted, Reply):
            return scripted
        usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return self.render(scripted, body["model"], stream=bool(body.get("stream")), usage=usage)

    def validate(self, body: Any) -> Reply | None:
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list) or not body["messages"]:
            return self.error(400, "'messages' is a required property and must be a non-empty array.")
        if body.get("model") not in self.models:
            return self.no_model(str(body.get("model")))
        for tool in body.get("tools") or []:
            fn = tool.get("function") if isinstance(tool, dict) else None
            if tool.get("type") != "function" or not isinstance(fn, dict) or not fn.get("name") \
                    or not isinstance(fn.get("parameters", {}), dict):
                return self.error(400, "Invalid 'tools': each must be {type: function, function: {name, parameters}}.")
        pending: list[str] = []
        for i, message in enumerate(body["messages"]):
            role = message.get("role") if isinstance(message, dict) else None
            if role not in ("system", "user", "assistant", "tool", "developer"):
                return self.error(400, f"Invalid value for 'messages[{i}].role': {role!r}.")
            if role == "tool":
                call_id = message.get("tool_call_id")
                if call_id not in pending:
                    return self.error(400, "Invalid parameter: messages with role 'tool' must be a response to a "
                                           "preceeding message with 'tool_calls'.")
                pending.remove(call_id)
                if not isinstance(message.get("content"), str):
                    return self.error(400, f"Invalid type for 'messages[{i}].content': expected a string.")
                continue
            if pending:
                return self.error(400, "An assistant message with 'tool_calls' must be followed by tool messages "
                                       "responding to each 'tool_call_id'. The following tool_call_ids did not "
                                       f"have response messages: {', '.join(pending)}")
            if role == "assistant" and message.get("tool_calls"):
                for call in message["tool_calls"]:
                    problem = self.check_assistant_tool_call(call, i)
                    if problem is not None:
                        return problem
                    pending.append(call["id"])
            elif role in ("system", "user") and not isinstance(message.get("content"), (str, list)):
                return self.error(400, f"Invalid type for 'messages[{i}].content': expected a string.")
        if pending:
            return self.error(400, "An assistant message with 'tool_calls' must be followed by tool messages "
                                   f"responding to each 'tool_call_id'. Missing: {', '.join(pending)}")
        return None

    def check_assistant_tool_call(self, call: Any, i: int) -> Reply | None:
        if not isinstance(call, dict) or not call.get("id") or call.get("type") != "function" \
                or not isinstance(call.get("function"), dict) or not call["function"].get("name") \
                or not isinstance(call["function"].get("arguments"), str):
            return self.error(400, f"Invalid 'messages[{i}].tool_calls': each needs id, type and function "
                                   "{name, arguments}.")
        return None

    # -- rendering ---------------------------------------------------------------------------------------
    def continuation(self, index: int, piece: str) -> dict[str, Any]:
        """A later fragment of tool call `index` (OpenAI sends only index and the arguments piece)."""
        return {"index": index, "function": {"arguments": piece}}

    def first_fragment(self, index: int, call_id: str, name: str, piece: str) -> dict[str, Any]:
        return {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": piece}}

    def render(self, completion: Completion, model: str, *, stream: bool, usage: bool = False) -> Reply:
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        created = int(time.time())
        ids = [c.id or f"call_{uuid.uuid4().hex[:24]}" for c in completion.tool_calls]
        finish = completion.finish_reason or ("tool_calls" if completion.tool_calls else "stop")
        if not stream:
            message: dict[str, Any] = {"role": "assistant", "content": completion.text or None}
            if completion.tool_calls:
                message["tool_calls"] = [{"id": i, "type": "function",
                                          "function": {"name": c.name, "arguments": c.arguments}}
                                         for i, c in zip(ids, completion.tool_calls)]
            return Reply.json(200, {"id": completion_id, "object": "chat.completion", "created": created,
                                    "model": model, "choices": [{"index": 0, "message": message,
                                                                 "finish_reason": finish}],
                                    "usage": USAGE})

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            return {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model,
                    "system_fingerprint": None,
                    "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]}

        events: list[Any] = [chunk({"role": "assistant", "content": ""})]
        events += [chunk({"content": piece}) for piece in split_text(completion.text, completion.text_parts)]
        if completion.stream_error:
            events.append({"error": {"message": completion.stream_error, "type": "server_error", "code": None}})
        else:
            fragments: list[list[dict[str, Any]]] = []
            for n, (call_id, call) in enumerate(zip(ids, completion.tool_calls)):
                pieces = split_text(call.arguments, call.parts) or [""]
                frags = [self.first_fragment(n, call_id, call.name, pieces[0] if self.name_with_first_piece else "")]
                rest = pieces[1:] if self.name_with_first_piece else pieces
                frags += [self.continuation(n, p) for p in rest if p]
                fragments.append(frags)
            if completion.interleave:
                ordered = [f for row in _round_robin(fragments) for f in row]
            else:
                ordered = [f for frags in fragments for f in frags]
            events += [chunk({"tool_calls": [f]}) for f in ordered]
            events.append(chunk({}, finish))
            if usage:  # stream_options.include_usage: a last chunk with no choices and the token counts
                events.append({"id": completion_id, "object": "chat.completion.chunk", "created": created,
                               "model": model, "choices": [], "usage": USAGE})
        body = "".join(f"data: {json.dumps(e, ensure_ascii=False)}\n\n" for e in events)
        if not completion.stream_error:
            body += "data: [DONE]\n\n"
        return Reply(200, body.encode("utf-8"), {"Content-Type": "text/event-stream; charset=utf-8",
                                                 "Cache-Control": "no-cache"})



def paced(reply: Reply, every: float, *, keepalive: float = 0.0) -> Reply:
    """A streamed reply sent one SSE event every `every` seconds (the first at once); with `keepalive`, an
    SSE comment line goes out every `keepalive` seconds while waiting, as proxies and some servers do."""
    events = [e + b"\n\n" for e in reply.body.split(b"\n\n") if e]
    parts: list[tuple[float, bytes]] = []
    for i, event in enumerate(events):
        wait = every if i else 0.0
        if keepalive:
            while wait > keepalive:
                parts.append((keepalive, b": keep-alive\n\n"))
                wait -= keepalive
        parts.append((wait, event))
    return Reply(reply.status, b"".join(p for _, p in parts), reply.headers, reply.delay, tuple(parts))


def _round_robin(rows: list[list[Any]]) -> list[list[Any]]:
    out = []
    for i in range(max((len(r) for r in rows), default=0)):
        out.append([r[i] for r in rows if i < len(r)])
    return out


class DashScopeChatServer(OpenAIChatServer):
    PREFIX = "/compatible-mode/v1"
    MODELS = ("qwen-plus", "qwen-max", "qwen-turbo", "qwen3-32b")
    name_with_first_piece = True  # DashScope puts the first arguments piece next to the name

    def __init__(self, api_key: str | None = "sk-dashscope-chat-test", *, models: Sequence[str] | None = None) -> None:
        super().__init__(api_key, models=models)

    def error(self, status: int, message: str, *, type: str = "invalid_request_error",  # noqa: A002
              code: str | None = None, headers: Mapping[str, str] | None = None, delay: float = 0.0) -> Reply:
        request_id = str(uuid.uuid4())
        payload = {"error": {"message": message, "type": type, "param": None, "code": code},
                   "id": f"chatcmpl-{request_id}", "request_id": request_id}
        return Reply.json(status, payload, headers=headers, delay=delay)

    def rate_limited(self, retry_after: str | None = None) -> Reply:
        headers = {"Retry-After": retry_after} if retry_after is not None else None
        return self.error(429, "Requests rate limit exceeded, please try again later.", type="limit_requests",
                          code="limit_requests", headers=headers)

    def server_error(self, status: int = 500) -> Reply:
        return self.error(status, "An internal error has occured, please try again later or contact service support.",
                          type="internal_error", code="internal_error")

    def bad_key(self, key: str) -> Reply:
        return self.error(401, "Incorrect API key provided. ", code="invalid_api_key")

    def no_key(self) -> Reply:
        return self.bad_key("")

    def no_model(self, model: str) -> Reply:
        return self.error(404, f"The model `{model}` does not exist or you do not have access to it.",
                          code="model_not_found")

    def continuation(self, index: int, piece: str) -> dict[str, Any]:
        return {"index": index, "id": "", "type": "function", "function": {"arguments": piece, "name": None}}

    def check_assistant_tool_call(self, call: Any, i: int) -> Reply | None:
        problem = super().check_assistant_tool_call(call, i)
        if problem is not None:
            return problem
        try:
            json.loads(call["function"]["arguments"])
        except ValueError:
            return self.error(400, "<400> InternalError.Algo.InvalidParameter: The \"function.arguments\" parameter "
                                   "of the code model must be in JSON format.", code="invalid_parameter_error")
        return None

"""The chat model: any OpenAI-compatible chat-completions endpoint, streamed, with tool calling.

DashScope is used through its OpenAI-compatible mode, so one client covers DashScope, OpenAI, vLLM,
Ollama and llama.cpp servers. `ChatModel.stream` is a generator: it yields answer text as it arrives
(and `Retrying` notes while it backs off) and *returns* the complete `AssistantReply`:

    reply = yield from model.stream(messages, tools)

Retries: the SDK's own retries are off (`max_retries=0`). A request is retried on 408/409/429/5xx and
timeouts, honouring `Retry-After`, with `rag_core.retry`'s backoff; but only while nothing of the
answer has been shown, because a retry after streamed text would show it twice. The loop is written
out here rather than through `call_with_retries` so that the person sees each wait as it happens.
A refused connection is not retried: a server that is not running will not start by waiting.

Failures become `ChatModelError`: a message for the person (where, what, what to do), never the key,
never a stack trace.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Mapping, Sequence

from ..config import redact_uri
from ..errors import AgentError
from ..retry import RETRYABLE_STATUS, backoff_delay, openai_retryable, retry_after_seconds

log = logging.getLogger(__name__)

DASHSCOPE_BASE_URL = "https://dashscope.aliyuncs.com/compatible-mode/v1"
DASHSCOPE_DEFAULT_MODEL = "qwen-plus"
_PROVIDER_NAMES = {"dashscope": "DashScope", "openai": "OpenAI-compatible"}


class ChatModelError(AgentError):
    """The chat model failed; `kind` names the failure for a UI ("connection", "auth", ...)."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True, repr=False)
class ChatModelConfig:
    provider: str  # "dashscope" | "openai"
    base_url: str
    model: str
    temperature: float = 0.3
    max_tokens: int = 1024
    timeout: float = 60.0
    max_retries: int = 3
    api_key_env: str = ""  # the variable the key came from, named in messages (the key never is)

    def __repr__(self) -> str:  # a base URL may carry user:password@
        return (f"ChatModelConfig(provider={self.provider!r}, base_url={redact_uri(self.base_url)!r}, "
                f"model={self.model!r}, temperature={self.temperature}, max_tokens={self.max_tokens}, "
                f"timeout={self.timeout}, max_retries={self.max_retries}, api_key_env={self.api_key_env!r})")


@dataclass(frozen=True)
class ToolCallRequest:
    """A complete tool call assembled from streamed fragments. `arguments` is the raw JSON text."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class AssistantReply:
    content: str
    tool_calls: tuple[ToolCallRequest, ...] = ()
    finish_reason: str | None = None


@dataclass(frozen=True)
class Retrying:
    """The model call failed in a way worth another try; waiting `delay` seconds before retry `retry`."""

    retry: int
    max_retries: int
    delay: float
    reason: str


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class StreamAccumulator:
    """Assembles streamed `chat.completion.chunk`s into one reply.

    Tool calls arrive in fragments keyed by `index`: the first fragment carries `id` and the function
    name, later ones only pieces of the arguments. Providers differ in the details, all handled here:
    DashScope restates `"id": ""` (and `name: null`) on every later fragment; some servers omit
    `index`; some (sglang, lmdeploy) reuse index 0 for a second call but give it a new id.
    """

    def __init__(self) -> None:
        self.content: list[str] = []
        self.finish_reason: str | None = None
        self._calls: dict[int, _PartialCall] = {}
        self._order: list[int] = []
        self._next_slot = 0
        self._slot_of_index: dict[Any, int] = {}

    def feed(self, chunk: Any) -> str:
        """Take one chunk; returns its answer text ("" if none)."""
        text = []
        for choice in getattr(chunk, "choices", None) or []:
            if getattr(choice, "index", 0) not in (0, None):
                continue  # n=1 is requested; ignore anything else
            delta = getattr(choice, "delta", None)
            if delta is not None:
                piece = getattr(delta, "content", None)
                if piece:
                    text.append(piece)
                for fragment in getattr(delta, "tool_calls", None) or []:
                    self._feed_tool_call(fragment)
            if getattr(choice, "finish_reason", None):
                self.finish_reason = choice.finish_reason
        joined = "".join(text)
        if joined:
            self.content.append(joined)
        return joined

    def _feed_tool_call(self, fragment: Any) -> None:
        index = getattr(fragment, "index", None)
        call_id = getattr(fragment, "id", None) or ""
        function = getattr(fragment, "function", None)
        name = (getattr(function, "name", None) or "") if function is not None else ""
        arguments = (getattr(function, "arguments", None) or "") if function is not None else ""

        slot = self._slot_of_index.get(index) if index is not None else None
        if slot is None and index is None and call_id:
            slot = next((s for s, c in self._calls.items() if c.id == call_id), None)
        if slot is None and index is None and not call_id and self._order:
            slot = self._order[-1]  # an anonymous continuation belongs to the call being streamed
        if slot is not None:
            current = self._calls[slot]
            if call_id and current.id and call_id != current.id:
                slot = None  # same index, new id: a new call (sglang/lmdeploy style)
        if slot is None:
            slot = self._next_slot
            self._next_slot += 1
            self._calls[slot] = _PartialCall()
            self._order.append(slot)
        if index is not None:
            self._slot_of_index[index] = slot
        call = self._calls[slot]
        if call_id and not call.id:
            call.id = call_id
        if name and not call.name:
            call.name = name  # a restated name is not appended: "f" + "f" is not a tool
        if arguments:
            call.arguments.append(arguments)

    def reply(self, step: int = 1) -> AssistantReply:
        calls = []
        for n, slot in enumerate(self._order):
            c = self._calls[slot]
            if not c.name and not c.arguments:
                continue
            calls.append(ToolCallRequest(id=c.id or f"call_{step}_{n}", name=c.name, arguments="".join(c.arguments)))
        return AssistantReply("".join(self.content), tuple(calls), self.finish_reason)


class ChatModel:
    """One configured chat endpoint. The client is built on first use; the key is never shown."""

    def __init__(self, config: ChatModelConfig, api_key: str | None, *, sleep: Callable[[float], None] = time.sleep,
                 jitter: Callable[[], float] = random.random) -> None:
        if not config.base_url:
            raise ChatModelError("The chat model needs a base URL (chat.base-url).", "config")
        if not config.model:
            raise ChatModelError("The chat model needs a model name (chat.model).", "config")
        self.config = config
        self._api_key = api_key or ""
        self._sleep = sleep
        self._jitter = jitter
        self._client: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        c = self.config
        return f"ChatModel(provider={c.provider!r}, base_url={self.where!r}, model={c.model!r})"

    @property
    def where(self) -> str:
        return redact_uri(self.config.base_url.rstrip("/"))

    def describe(self) -> str:
        """E.g. "qwen-plus via DashScope (https://dashscope.aliyuncs.com/compatible-mode/v1)"."""
        name = _PROVIDER_NAMES.get(self.config.provider, self.config.provider)
        return f"{self.config.model} via {name} ({self.where})"

    def _get_client(self) -> Any:
        with self._lock:
            if self._client is None:
                import openai

                self._client = openai.OpenAI(base_url=self.config.base_url.rstrip("/"),
                                             api_key=self._api_key or "not-needed",
                                             timeout=self.config.timeout, max_retries=0)
            return self._client

    def stream(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] = (),
               step: int = 1) -> Generator[str | Retrying, None, AssistantReply]:
        import openai

        c = self.config
        kwargs: dict[str, Any] = {"model": c.model, "messages": list(messages), "stream": True,
                                  "temperature": c.temperature, "max_tokens": c.max_tokens}
        if tools:
            kwargs["tools"] = list(tools)
        if not self._api_key:
            kwargs["extra_headers"] = {"Authorization": openai.omit}  # keyless local servers
        retries = 0
        while True:
            acc = StreamAccumulator()
            shown = False
            try:
                response = self._get_client().chat.completions.create(**kwargs)
                try:
                    for chunk in response:
                        text = acc.feed(chunk)
                        if text:
                            shown = True
                            yield text
                finally:
                    response.close()
                return acc.reply(step)
            except openai.OpenAIError as exc:
                if shown or retries >= c.max_retries or not openai_retryable(exc):
                    raise self._explain(exc, shown, retries) from None
                failure = exc
            retries += 1
            delay = backoff_delay(retries, 0.5, 8.0, self._jitter())
            hint = retry_after_seconds(failure)
            if hint is not None:
                delay = max(delay, min(hint, 8.0))
            reason = self._describe(failure)
            log.warning("Chat via %s: %s; retry %d/%d in %.1f s", self.where, reason, retries, c.max_retries, delay)
            yield Retrying(retries, c.max_retries, delay, reason)
            self._sleep(delay)

    # -------------------------------------------------------------------------------- messages
    def _describe(self, exc: Exception) -> str:
        import openai

        if isinstance(exc, openai.APITimeoutError):
            return f"no answer within {self.config.timeout:g} s"
        if isinstance(exc, openai.APIStatusError):
            return f"HTTP {exc.status_code}"
        return type(exc).__name__

    def _explain(self, exc: Exception, shown: bool, retries: int) -> ChatModelError:
        import openai

        c = self.config
        where = f"The chat model at {self.where}"
        attempts = f"{retries + 1} attempt{'s' if retries else ''}"
        if isinstance(exc, openai.APITimeoutError):
            if shown:
                return ChatModelError(f"{where} stopped sending its answer (no data within {c.timeout:g} s). "
                                      "Try again.", "timeout")
            return ChatModelError(f"{where} did not answer within {c.timeout:g} s ({attempts}). Try again, "
                                  "or raise chat.timeout.", "timeout")
        if isinstance(exc, openai.APIConnectionError):
            if shown:
                return ChatModelError(f"The connection to the chat model at {self.where} broke during the answer. "
                                      "Try again.", "broken_stream")
            return ChatModelError(f"{where} did not answer ({_connection_reason(exc)}). Check chat.base-url "
                                  "or switch to offline mode (chat.provider = offline).", "connection")
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            if status in (401, 403):
                env = c.api_key_env or "the API key variable"
                if not self._api_key:
                    return ChatModelError(f"{where} needs an API key (HTTP {status}): set {env}.", "auth")
                return ChatModelError(f"{where} rejected the API key (HTTP {status}). Check {env}.", "auth")
            if status == 404:
                if self._mentions_model(exc):
                    return ChatModelError(f"{where} has no model '{c.model}' (HTTP 404). Check chat.model.",
                                          "not_found")
                return ChatModelError(f"{where} has no chat-completions endpoint (HTTP 404). Check chat.base-url "
                                      "(it usually ends in /v1).", "not_found")
            if status == 429:
                return ChatModelError(f"{where} is rate limiting requests (HTTP 429), still after {attempts}. "
                                      "Wait a minute and try again.", "rate_limit")
            if status >= 500 or status in RETRYABLE_STATUS:
                return ChatModelError(f"{where} kept failing (HTTP {status}) after {attempts}. Try again later.",
                                      "server")
            detail = self._server_message(exc)
            return ChatModelError(f"{where} refused the request (HTTP {status}{': ' + detail if detail else ''}).",
                                  "bad_request")
        if isinstance(exc, openai.APIError):  # an error event inside the stream
            detail = self._server_message(exc)
            return ChatModelError(f"{where} reported an error{' during the answer' if shown else ''}"
                                  f"{': ' + detail if detail else ''}. Try again.", "server")
        return ChatModelError(f"{where} failed ({type(exc).__name__}). Try again.", "server")

    def _server_message(self, exc: Any) -> str:
        body = getattr(exc, "body", None)
        message = ""
        if isinstance(body, dict):
            inner = body.get("error") if isinstance(body.get("error"), dict) else body
            message = str(inner.get("message") or "")
        elif isinstance(body, str):
            message = body
        message = " ".join(message.split())
        if self._api_key:
            message = message.replace(self._api_key, "***")
        return message[:200] + ("…" if len(message) > 200 else "")

    def _mentions_model(self, exc: Any) -> bool:
        body = getattr(exc, "body", None)
        inner = body.get("error") if isinstance(body, dict) and isinstance(body.get("error"), dict) else body
        if isinstance(inner, dict):
            return inner.get("code") in ("model_not_found", "ModelNotFound") or self.config.model in str(inner.get("message", ""))
        return False




def _connection_reason(exc: BaseException) -> str:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 10:
        seen.append(current)
        current = current.__cause__ or current.__context__
    if any(isinstance(e, ConnectionRefusedError) for e in seen):
        return "connection refused"
    text = " ".join(str(e) for e in seen).lower()
    if "refused" in text:
        return "connection refused"
    if any(s in text for s in ("name or service not known", "nodename nor servname", "getaddrinfo",
                               "name resolution", "no address associated")):
        return "host not found"
    if "reset" in text:
        return "connection reset"
    return "could not connect"

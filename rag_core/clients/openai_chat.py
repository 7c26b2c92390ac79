"""The chat model: any OpenAI-compatible chat-completions endpoint, streamed, with tool calling.

DashScope is used through its OpenAI-compatible mode, so one client covers DashScope, OpenAI, vLLM,
Ollama and llama.cpp servers. `OpenAIChatModel.stream` is a generator: it yields answer text as it arrives
(and `Retrying` notices while it backs off) and *returns* the complete `AssistantReply`:

    reply = yield from model.stream(messages, tools)

Deadlines (`chat.timeout`, `chat.deadline`): the SDK's timeouts are per socket read, so a server sending
SSE keep-alives or one byte at a time would hold a turn forever. The stream is read by a worker thread
(`rag_core.remote.stream_within`) and the answer must start within `chat.timeout` (keep-alive comments
do not count), may never go silent longer than `chat.timeout` while it streams, and must end by the
turn's deadline (`until`, from `chat.deadline`).

Retries (`RemoteAdapter`, the SDK's own are off): 408/409/429/5xx and timeouts, honouring `Retry-After`,
but only while nothing of the answer has been shown, because a retry after streamed text would show it
twice. A refused connection is not retried: a server that is not running will not start by waiting.

Failures become `ChatModelError`: one line for the person (where, what, what to do), never the key. A
reply that is not the API's (an HTML page with status 200, an event that is not JSON, a stream that
closes without a single event) is named as such.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import tracing
from ..config import Settings, redact_uri
from ..errors import ChatModelError, ConfigError
from ..phrases import Phrase, english
from ..records import AssistantReply, ToolCallRequest
from ..registry import DEFAULT_KEY_ENV, secret
from ..remote import Endpoint, Failure, MalformedReply, RemoteAdapter, Retrying, clip, explain, not_json, stream_within
from ..tracing import semconv as sc

__all__ = ["ChatModelConfig", "DASHSCOPE_BASE_URL", "DASHSCOPE_DEFAULT_MODEL", "OpenAIChatModel",
           "StreamAccumulator", "build_dashscope", "build_openai"]

DASHSCOPE_BASE_URL = "https://dashscope.aliyuncs.com/compatible-mode/v1"
DASHSCOPE_DEFAULT_MODEL = "qwen-plus"
_PROVIDER_NAMES = {"dashscope": "DashScope", "openai": "OpenAI-compatible"}


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
        self.usage: dict[str, int] | None = None
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
        usage = getattr(chunk, "usage", None)  # the last chunk, with stream_options.include_usage
        if usage is not None:
            self.usage = {k: v for k in ("prompt_tokens", "completion_tokens", "total_tokens")
                          if isinstance(v := getattr(usage, k, None), int) and not isinstance(v, bool)}
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
        return AssistantReply("".join(self.content), tuple(calls), self.finish_reason, self.usage or None)


class OpenAIChatModel(RemoteAdapter):
    """One configured chat endpoint speaking the OpenAI chat-completions protocol (the `ChatModel` port). The
    client is built on first use; the key is never shown."""

    def __init__(self, config: ChatModelConfig, api_key: str | None, *, sleep: Callable[[float], None] = time.sleep,
                 jitter: Callable[[], float] = random.random, clock: Callable[[], float] = time.monotonic) -> None:
        if not config.base_url:
            raise ChatModelError("The chat model needs a base URL (chat.base-url).", "config")
        if not config.model:
            raise ChatModelError("The chat model needs a model name (chat.model).", "config")
        self.config = config
        self._api_key = api_key or ""
        self._client: Any = None
        self._lock = threading.Lock()
        endpoint = Endpoint(f"The chat model at {self.where}", "chat", ChatModelError, path="chat-completions",
                            model=config.model, key_env=config.api_key_env or "the API key variable",
                            has_key=bool(self._api_key), url_hint=" (it usually ends in /v1)",
                            connection_hint=" or switch to offline mode (chat.provider = offline)")
        super().__init__(endpoint, timeout=config.timeout, max_retries=config.max_retries, secret=self._api_key,
                         sleep=sleep, jitter=jitter, clock=clock)

    def __repr__(self) -> str:
        c = self.config
        return f"OpenAIChatModel(provider={c.provider!r}, base_url={self.where!r}, model={c.model!r})"

    @property
    def where(self) -> str:
        return redact_uri(self.config.base_url.rstrip("/"))

    def describe(self) -> str:
        """E.g. "qwen-plus via DashScope (https://dashscope.aliyuncs.com/compatible-mode/v1)"."""
        return english(self.describe_phrase())

    def describe_phrase(self) -> Phrase:
        """describe() as a code with parameters (the app renders it in the user's language)."""
        provider = self.config.provider
        name: Phrase | str = Phrase(f"chat.provider.{provider}") if provider in _PROVIDER_NAMES else provider
        return Phrase("chat.model_via", {"model": self.config.model, "provider": name, "where": self.where})

    def _get_client(self) -> Any:
        with self._lock:
            if self._client is None:
                import openai

                self._client = openai.OpenAI(base_url=self.config.base_url.rstrip("/"),
                                             api_key=self._api_key or "not-needed",
                                             timeout=self.config.timeout, max_retries=0)
            return self._client

    def stream(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] = (),
               step: int = 1, until: float | None = None,
               temperature: float | None = None) -> Generator[str | Retrying, None, AssistantReply]:
        import openai

        c = self.config
        kwargs: dict[str, Any] = {"model": c.model, "messages": list(messages), "stream": True,
                                  "temperature": c.temperature if temperature is None else temperature,
                                  "max_tokens": c.max_tokens}
        if tools:
            kwargs["tools"] = list(tools)
        # Token counts in a last chunk (OpenAI, DashScope, vLLM, Ollama), for the trace; servers without it send none.
        kwargs["stream_options"] = {"include_usage": True}
        if not self._api_key:
            kwargs["extra_headers"] = {"Authorization": openai.omit}  # keyless local servers
        shown = False

        def attempt(seconds: float) -> Generator[str, None, AssistantReply]:
            nonlocal shown
            acc = StreamAccumulator()
            events = 0
            for chunk in stream_within(lambda: self._open(kwargs), first=seconds, idle=c.timeout, until=until,
                                       clock=self._clock):
                events += 1
                text = acc.feed(chunk)
                if text:
                    shown = True
                    yield text
            if events == 0:
                raise MalformedReply("closed the answer's event stream without sending a single event")
            return acc.reply(step)

        def explain_failure(failure: Failure, tries: int) -> Exception:
            if shown and failure.kind == "connection":
                return ChatModelError(f"The connection to the chat model at {self.where} broke during the answer. "
                                      "Try again.", "broken_stream")
            error = explain(failure, self.endpoint, tries, c.timeout)
            if failure.kind == "stream_error":
                error.kind = "server"
            return error

        span = tracing.start("chat.completions", sc.LLM, {
            sc.LLM_MODEL_NAME: c.model, sc.LLM_PROVIDER: c.provider, "rag.step": step,
            sc.LLM_INVOCATION_PARAMETERS: {"temperature": kwargs["temperature"], "max_tokens": c.max_tokens},
            **{sc.message(sc.LLM_INPUT_MESSAGES, i, sc.MESSAGE_ROLE): m.get("role") for i, m in enumerate(messages)},
            **{sc.message(sc.LLM_INPUT_MESSAGES, i, sc.MESSAGE_CONTENT): m.get("content")
               for i, m in enumerate(messages) if isinstance(m.get("content"), str)}})
        try:  # each step with the span current: the stream's reader thread copies it (remote.deadline)
            reply = yield from tracing.within(span, self._retrying(attempt, may_retry=lambda: not shown,
                                                                  explain=explain_failure))
        except BaseException as exc:
            tracing.fail(span, exc, getattr(exc, "kind", None))
            raise
        else:
            usage = reply.usage or {}
            tracing.set_attributes(span, {
                sc.LLM_FINISH_REASON: reply.finish_reason, sc.LLM_TOKEN_COUNT_PROMPT: usage.get("prompt_tokens"),
                sc.LLM_TOKEN_COUNT_COMPLETION: usage.get("completion_tokens"),
                sc.LLM_TOKEN_COUNT_TOTAL: usage.get("total_tokens"),
                # a step that called tools shows them as its output (its text is empty), as trace viewers read it
                sc.OUTPUT_VALUE: reply.content or json.dumps(
                    [{"name": c.name, "arguments": c.arguments} for c in reply.tool_calls], ensure_ascii=False),
                sc.message(sc.LLM_OUTPUT_MESSAGES, 0, sc.MESSAGE_ROLE): "assistant",
                sc.message(sc.LLM_OUTPUT_MESSAGES, 0, sc.MESSAGE_CONTENT): reply.content or None,
                **{sc.tool_call(0, j, name): value for j, c in enumerate(reply.tool_calls)
                   for name, value in ((sc.TOOL_CALL_ID, c.id), (sc.TOOL_CALL_FUNCTION_NAME, c.name),
                                       (sc.TOOL_CALL_FUNCTION_ARGUMENTS, c.arguments))},
                "rag.tool_calls": [call.name for call in reply.tool_calls]})
            return reply
        finally:
            tracing.end(span)

    def _open(self, kwargs: Mapping[str, Any]) -> Any:
        """The SDK's event stream, once the answer's headers say it is one (runs in the worker)."""
        stream = self._get_client().chat.completions.create(**kwargs)
        content_type = stream.response.headers.get("content-type", "")
        if content_type and "event-stream" not in content_type:
            try:
                head = next(stream.response.iter_bytes(), b"")[:2048]
            finally:
                stream.close()
            if head.lstrip().startswith(b"{"):
                raise MalformedReply(f"answered with one JSON document ({content_type.split(';')[0]}) instead of an "
                                     f"event stream (does it support stream=true?): "
                                     f"{clip(head.decode('utf-8', 'replace'), 60)!r}")
            raise MalformedReply(not_json(head, content_type, instead="an event stream"))
        return stream

    def _classify(self, exc: BaseException) -> Failure | None:
        if isinstance(exc, json.JSONDecodeError):  # the SDK parsing an SSE `data:` line
            return Failure("malformed", detail=f"sent an event that is not JSON: {clip(exc.doc, 60)!r}")
        return super()._classify(exc)


# ---------------------------------------------------------------------------------------- factories
# chat.provider's models (registered in clients/providers.py); bootstrap.build_chat_model calls the one chosen.
def build_dashscope(settings: Settings, env: Mapping[str, str] | None) -> OpenAIChatModel:
    """chat.provider = dashscope, or auto with DASHSCOPE_API_KEY set: DashScope's OpenAI-compatible mode (chat.base-url
    replaces its endpoint), qwen-plus unless chat.model says; the key from chat.api-key-env, else DASHSCOPE_API_KEY
    (which auto falls back to when the variable chat.api-key-env names is empty)."""
    key_env = settings["chat.api-key-env"] or DEFAULT_KEY_ENV["dashscope"]
    key = secret(key_env, env)
    if not key and settings["chat.provider"] == "auto":
        key_env, key = DEFAULT_KEY_ENV["dashscope"], secret(DEFAULT_KEY_ENV["dashscope"], env)
    if not key:
        raise ConfigError(f"chat.provider = dashscope needs an API key in ${key_env}. Set it, or use "
                          "chat.provider = auto (offline mode without a key).")
    return OpenAIChatModel(_config(settings, "dashscope", settings["chat.base-url"] or DASHSCOPE_BASE_URL,
                                   settings["chat.model"] or DASHSCOPE_DEFAULT_MODEL, key_env), key)


def build_openai(settings: Settings, env: Mapping[str, str] | None) -> OpenAIChatModel:
    """chat.provider = openai, or auto with chat.base-url and its key set: chat.model is needed, and chat.base-url or a
    key (api.openai.com then); the key from chat.api-key-env, else OPENAI_API_KEY (none for a keyless local server)."""
    key_env = settings["chat.api-key-env"] or DEFAULT_KEY_ENV["openai"]
    key = secret(key_env, env)
    base_url, model = settings["chat.base-url"], settings["chat.model"]
    if not model:
        raise ConfigError("chat.provider = openai needs chat.model (e.g. gpt-4o-mini, or the name your "
                          "vLLM/Ollama server serves, such as qwen2.5:7b).")
    if not base_url and not key:
        raise ConfigError(f"chat.provider = openai without chat.base-url talks to api.openai.com and needs "
                          f"${key_env}. For a local server set chat.base-url (e.g. http://localhost:11434/v1).")
    return OpenAIChatModel(_config(settings, "openai", base_url or "https://api.openai.com/v1", model, key_env), key)


def _config(settings: Settings, provider: str, base_url: str, model: str, key_env: str) -> ChatModelConfig:
    return ChatModelConfig(provider=provider, base_url=base_url, model=model, temperature=settings["chat.temperature"],
                           max_tokens=settings["chat.max-tokens"], timeout=settings["chat.timeout"],
                           max_retries=settings["chat.max-retries"], api_key_env=key_env)

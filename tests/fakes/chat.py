"""A chat model without a server, scripted with the loopback chat servers' vocabulary:

    model = ScriptedChatModel(Completion.calls(tool_call("search_knowledge_base", {"query": "cpu"})),
                              lambda request: Completion.say(f"{len(request['messages'])} messages"),
                              ChatModelError("The model is down.", "connection"))

Each `stream` call takes the next item: a `Completion` (its text streamed in `text_parts` pieces, then
its tool calls; `stream_error` raises after the text), a callable computing one from the request, or an
exception to raise. Every call is recorded in `requests` ({"messages", "tools", "step", "until", "temperature"}).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any

from rag_core.errors import ChatModelError
from rag_core.records import AssistantReply, ToolCallRequest
from rag_core.remote import Retrying
from tests.servers.chat import Completion, split_text

Item = Completion | Exception | Callable[[dict[str, Any]], "Completion | Exception"]


class ScriptedChatModel:
    def __init__(self, *items: Item, clock: Callable[[], float] = time.monotonic) -> None:
        self._items: list[Item] = list(items)
        self._clock = clock
        self.requests: list[dict[str, Any]] = []

    def reply(self, *items: Item) -> ScriptedChatModel:
        self._items.extend(items)
        return self

    def describe(self) -> str:
        return "scripted model (tests)"

    def stream(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] = (),
               step: int = 1, until: float | None = None,
               temperature: float | None = None) -> Generator[str | Retrying, None, AssistantReply]:
        request = {"messages": [dict(m) for m in messages], "tools": list(tools), "step": step, "until": until,
                   "temperature": temperature}
        self.requests.append(request)
        if until is not None and self._clock() >= until:
            raise ChatModelError("The scripted model did not finish its answer before the deadline (chat.deadline). "
                                 "Try again, or raise chat.deadline.", "timeout")
        item = self._items.pop(0) if self._items else Completion.say("OK")
        if callable(item) and not isinstance(item, Completion):
            item = item(request)
        if isinstance(item, Exception):
            raise item
        yield from split_text(item.text, item.text_parts)
        if item.stream_error:
            raise ChatModelError(f"The scripted model reported an error during the answer: {item.stream_error}. "
                                 "Try again.", "server")
        calls = tuple(ToolCallRequest(spec.id or f"call_{step}_{n}", spec.name, spec.arguments)
                      for n, spec in enumerate(item.tool_calls))
        return AssistantReply(item.text, calls, item.finish_reason or ("tool_calls" if calls else "stop"))

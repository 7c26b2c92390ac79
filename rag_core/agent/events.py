"""What one agent turn yields, in order, for a UI or the CLI to render.

Every turn is a stream of events that ends with exactly one terminal event, `done` or `error`:

    tool_call -> tool_result -> ... -> content ... -> done
                                   (notice at any point)  or  -> error

Events are frozen dataclasses with a literal `type` field and `to_dict()` (JSON-ready). The
knowledge-base `tool_result` carries the full `LookupResult` object, so a page can render the same
table as the retrieval debugger; `to_dict()` expands it with `LookupResult.to_dict()`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from ..retrieval import LookupResult


def _plain(value: Any) -> Any:
    if isinstance(value, LookupResult):
        return value.to_dict()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class _Event:
    def to_dict(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}  # type: ignore[arg-type]


@dataclass(frozen=True)
class ToolCallEvent(_Event):
    """The model (or offline mode) asked for a tool. `arguments` is None when the model's arguments
    were not valid JSON; `raw_arguments` is what it sent either way."""

    call_id: str
    name: str
    arguments: Mapping[str, Any] | None
    raw_arguments: str
    step: int
    type: Literal["tool_call"] = field(default="tool_call", init=False)


@dataclass(frozen=True)
class ToolResultEvent(_Event):
    """What went back to the model for one tool call.

    `result` is the JSON object the model received. `ok` is False when the tool could not run (bad
    arguments, unknown tool, a failing service); `error` then says why, in words for a person.
    For the knowledge-base tool, `lookup` is the full LookupResult of the one lookup path and
    `evidence_keys` the `document_id`s the model was shown and the `matched` keys of the blocks holding several
    hits (citable this turn).
    """

    call_id: str
    name: str
    ok: bool
    result: Any
    step: int
    seconds: float
    error: str | None = None
    evidence_keys: tuple[str, ...] = ()
    lookup: LookupResult | None = None
    type: Literal["tool_result"] = field(default="tool_result", init=False)


@dataclass(frozen=True)
class ContentEvent(_Event):
    """A piece of the answer, as it streams. Concatenated, the pieces are `DoneEvent.text`."""

    text: str
    step: int
    type: Literal["content"] = field(default="content", init=False)


@dataclass(frozen=True)
class NoticeEvent(_Event):
    """Something the person may want to know that does not end the turn.

    kinds: "retry" (a model call failed in a way worth another try; waiting), "malformed_tool_call" (the model
    sent arguments that were not JSON; it was told and the turn goes on), "length" (the answer was cut at
    chat.max-tokens), "query_shortened" (offline mode searched for a long question's first 4,000 characters).
    """

    kind: str
    message: str
    step: int
    type: Literal["notice"] = field(default="notice", init=False)


@dataclass(frozen=True)
class DoneEvent(_Event):
    """The turn is over.

    `citations`: the `[document_id]`s cited in `text` that a tool really returned this turn, in order of
    first citation. `unverified_citations`: cited keys that no tool returned this turn (invented or
    remembered from an earlier turn): a page should flag them. `evidence_keys`: everything the tools
    returned this turn. `stop_reason`: "answer", or "max_steps" when chat.max-steps ended the turn.
    `mode`: "model" or "offline". `trace_id`: the turn's trace (rag_core.tracing), by which it is rated;
    `turn_index`: its place in its session as the turns store recorded it (-1: not recorded). `usage`: the tokens
    the turn used (agent.usage), None where nothing was counted (alert triage).
    """

    text: str
    citations: tuple[str, ...]
    unverified_citations: tuple[str, ...]
    evidence_keys: tuple[str, ...]
    steps: int
    mode: str
    stop_reason: str = "answer"
    trace_id: str = ""
    turn_index: int = -1
    # tokens: prompt_tokens, completion_tokens, total_tokens, counted_by (the model's report or the tokenizer)
    usage: Mapping[str, Any] | None = None
    type: Literal["done"] = field(default="done", init=False)


@dataclass(frozen=True)
class ErrorEvent(_Event):
    """The turn failed. `message` is for the person: what happened and what to do, no internals.

    kinds: from the chat model "connection", "timeout", "auth", "rate_limit", "server", "not_found",
    "bad_request", "broken_stream", "malformed" (an answer that is not the API's: an HTML page, an event
    that is not JSON, a stream closed without events); "empty" (the model answered nothing: no text, no
    tool call); "question" (empty or too long); "tool" (offline mode: the knowledge-base search itself
    failed, e.g. nothing is ingested); "internal" (a bug; details only in the log).
    """

    message: str
    kind: str
    step: int
    type: Literal["error"] = field(default="error", init=False)


Event = ToolCallEvent | ToolResultEvent | ContentEvent | NoticeEvent | DoneEvent | ErrorEvent

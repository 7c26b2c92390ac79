"""Asking a chat model for one JSON object: what test-set generation and the answer judge share.

The model is a `ports.ChatModel`, passed in (built by the entry point, never here), called at temperature 0.
Retries of 429, 5xx and timeouts are the client's (rag_core.remote: backoff, Retry-After, its deadline);
what it still cannot get is one item's failure, returned as such (`JsonReply.failure = "model_failed"`) so
the caller counts it and goes on. A reply that is not the JSON object asked for is asked again, with what was
wrong, while `retries` and the item's deadline allow; then it is `"malformed"`.

Failures that no other item would escape end the run instead (`EvaluationError`): a refused key, an unknown
model, a setting that is wrong (kinds "auth", "not_found", "config"), and a connection refused before any
call of the run succeeded (the server is not there; later, a lost connection is one item's failure).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import EvaluationError, RemoteError
from ..ports import ChatModel

FATAL_KINDS = frozenset({"auth", "not_found", "config"})
_FENCED = re.compile(r"^\s*```[a-zA-Z]*\s*\n(.*?)\n\s*```\s*$", re.S)


@dataclass(frozen=True)
class JsonReply:
    """What one question to the model gave: the object (None when it failed), every raw reply text in order,
    and when it failed, why ("malformed" or "model_failed"), the detail, and the model error's kind."""

    value: dict[str, Any] | None
    raw: tuple[str, ...]
    failure: str | None = None
    detail: str = ""
    kind: str = ""


def parse_object(text: str) -> tuple[dict[str, Any] | None, str]:
    """The JSON object a reply holds (alone, or in a ```json fence), or None and what is wrong with it."""
    body = (text or "").strip()
    fenced = _FENCED.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body:
        return None, "the reply was empty"
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        return None, f"the reply is not JSON ({exc.msg} at character {exc.pos})"
    if not isinstance(value, dict):
        return None, f"the reply is JSON but not an object (a {type(value).__name__})"
    return value, ""


def drain(stream: Any) -> Any:
    """The reply a `ChatModel.stream` generator returns (its text pieces and retry notices are not shown)."""
    while True:
        try:
            next(stream)
        except StopIteration as stop:
            return stop.value


class JsonAsker:
    """Asks one model for JSON objects, item after item, remembering whether any call of the run succeeded."""

    def __init__(self, model: ChatModel, *, retries: int = 2, deadline: float = 120.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if retries < 0 or not deadline > 0:
            raise EvaluationError("retries must be at least 0 and the deadline positive.")
        self.model = model
        self.retries = retries
        self.deadline = deadline
        self.clock = clock
        self.succeeded = False

    def ask(self, messages: Sequence[Mapping[str, Any]], check: Callable[[dict[str, Any]], str | None],
            correction: Callable[[str], str]) -> JsonReply:
        """The object the model answers `messages` with, once `check(value)` finds nothing wrong with it
        (None); otherwise the model is told `correction(problem)` and asked again."""
        conversation = [dict(m) for m in messages]
        until = self.clock() + self.deadline
        raw: list[str] = []
        problem = ""
        for attempt in range(self.retries + 1):
            if attempt and self.clock() >= until:
                problem += f" (then the item's deadline of {self.deadline:g} s passed)"
                break
            try:
                reply = drain(self.model.stream(conversation, (), 1, until, temperature=0.0))
            except RemoteError as exc:
                if exc.kind in FATAL_KINDS or (exc.kind == "connection" and not self.succeeded):
                    raise EvaluationError(str(exc)) from None
                detail = str(exc)
                if exc.kind == "timeout" and self.clock() >= until:  # ours, not chat.deadline, which it names
                    detail = f"no answer within the item's deadline ({self.deadline:g} s): {detail}"
                return JsonReply(None, tuple(raw), "model_failed", detail, exc.kind)
            self.succeeded = True
            raw.append(reply.content)
            value, problem = parse_object(reply.content)
            if value is not None:
                problem = check(value) or ""
                if not problem:
                    return JsonReply(value, tuple(raw))
            conversation += [{"role": "assistant", "content": reply.content or "(empty)"},
                             {"role": "user", "content": correction(problem)}]
        return JsonReply(None, tuple(raw), "malformed", problem)


def text_fields(value: Mapping[str, Any], *names: str) -> str | None:
    """What is wrong with `value` if any of `names` is not a non-empty string, else None."""
    for name in names:
        field = value.get(name)
        if not isinstance(field, str) or not field.strip():
            return f'"{name}" is missing or not a non-empty string'
    return None

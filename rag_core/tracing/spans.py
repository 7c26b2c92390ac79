"""Span helpers that keep one turn in one trace, in generators and worker threads alike.

A generator that yields while a span is "current" would leave it attached in whatever context pulls it next
(another worker thread in the HTTP service) and detach it in the wrong one. So long-lived spans (a turn, a
streamed model call) are started explicitly (`start`) and made current only while one step runs (`within`:
each `next()` attaches and detaches in the same thread); spans of work that does not yield (a tool call, a
lookup stage) are plain `with span(...)` blocks. Worker threads get the caller's context copied in
(rag_core.remote.deadline), so what runs there lands in the same trace.

Content (questions, queries, answers, document text) goes through `set_content`, which drops it when
`tracing.capture-content` is false. Nothing here is given a secret: error messages are the ones shown to people,
already free of keys.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode

from . import semconv
from .setup import capture_content, tracer

T = TypeVar("T")
R = TypeVar("R")

Attributes = Mapping[str, Any]


def _clean(attributes: Attributes | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in (attributes or {}).items():
        if value is None:
            continue
        if semconv.is_content(key) and not capture_content():
            continue
        if isinstance(value, (str, bool, int, float)):
            out[key] = value
        elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            out[key] = list(value)
        else:
            out[key] = json.dumps(value, ensure_ascii=False, default=str)
    return out


def start(name: str, kind: str, attributes: Attributes | None = None) -> Span:
    """A span started as a child of the current one (or a new trace), not made current: end it yourself."""
    return tracer().start_span(name, attributes={semconv.SPAN_KIND: kind, **_clean(attributes)})


@contextmanager
def span(name: str, kind: str = semconv.CHAIN, attributes: Attributes | None = None) -> Iterator[Span]:
    """A child span, current inside the block; an exception marks it failed (the message only) and passes on."""
    with tracer().start_as_current_span(name, attributes={semconv.SPAN_KIND: kind, **_clean(attributes)},
                                        record_exception=False, set_status_on_exception=False) as current:
        try:
            yield current
        except BaseException as exc:
            fail(current, exc)
            raise
        succeeded(current)


def succeeded(target: Span) -> None:
    """A span whose work ended without failing: its status OK (what trace viewers show), unless marked failed."""
    status = getattr(target, "status", None)  # the SDK's spans have it; a no-op span has none
    if status is None or status.status_code is StatusCode.UNSET:
        target.set_status(Status(StatusCode.OK))


def end(target: Span) -> None:
    """End a span `start` made: OK unless `fail` marked it."""
    succeeded(target)
    target.end()


def stage(name: str) -> Any:
    """A lookup stage's span (embed, dense_search, fusion, rerank, postprocess, projection)."""
    return span(name, semconv.CHAIN, {semconv.STAGE: name})


def within(current: Span, items: Generator[T, None, R]) -> Generator[T, None, R]:
    """`items`, each step run with `current` as the current span (see the module docstring); returns what a
    generator `items` returns (`reply = yield from within(span, model.stream(...))`). Closing this generator
    closes `items`."""
    try:
        while True:
            token = otel_context.attach(trace.set_span_in_context(current))
            try:
                item = next(items)
            except StopIteration as stop:
                value: R = stop.value
                return value
            finally:
                otel_context.detach(token)
            yield item
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            token = otel_context.attach(trace.set_span_in_context(current))
            try:
                close()
            finally:
                otel_context.detach(token)


def current() -> Span:
    """The span work is running in now (a no-op span outside any)."""
    return trace.get_current_span()


def set_attributes(target: Span, attributes: Attributes) -> None:
    target.set_attributes(_clean(attributes))


def set_content(target: Span, key: str, value: Any) -> None:
    set_attributes(target, {key: value})


def fail(target: Span, exc: BaseException | str, kind: str | None = None) -> None:
    """Mark a span failed with a message people may read (a RagError's), or only the exception's type."""
    from ..errors import RagError

    if isinstance(exc, str):
        message = exc
    elif isinstance(exc, RagError):
        message = str(exc)
    elif isinstance(exc, GeneratorExit):
        message = "stopped: the caller went away"
    else:
        message = type(exc).__name__
    target.set_status(Status(StatusCode.ERROR, message[:500]))
    if kind:
        target.set_attribute(semconv.ERROR_KIND, kind)


def trace_id(target: Span | None = None) -> str:
    """The 32-hex trace id of `target` (default: the current span); "" when there is none."""
    ctx = (target or trace.get_current_span()).get_span_context()
    return format(ctx.trace_id, "032x") if ctx.trace_id else ""

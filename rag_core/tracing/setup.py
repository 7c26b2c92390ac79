"""The process's tracer provider: always there (so every turn has a trace id to rate it by), exporting only
when `tracing.otlp-endpoint` is set.

Export never holds up a turn: ended spans go into a bounded queue (`tracing.queue-size`) that a background
thread sends in batches by OTLP over HTTP/protobuf, each request bounded by `tracing.export-timeout`. A
collector that is slow, down or answering errors costs spans, never time: when the queue is full the oldest
span is dropped, and what was dropped or failed to send is counted (`stats()`, shown by `/v1/health`; a log
line on the first loss and every 100 after it).

The provider is ours, not OpenTelemetry's global one: the app, the service and the tests each install theirs
(`install`) without fighting over a set-once global.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter, SpanExportResult

if TYPE_CHECKING:
    from ..config import Settings

log = logging.getLogger(__name__)

SCOPE = "rag_core"
LOSS_LOG_EVERY = 100


@dataclass
class Counters:
    """What became of the spans handed to the exporter (thread-safe)."""

    exported: int = 0
    failed: int = 0  # sent, but the collector refused them or did not answer in time
    dropped: int = 0  # never sent: the queue was full
    taken: int = 0  # handed to the exporter so far
    ended: int = 0  # ended spans queued
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def lost(self) -> int:
        return self.failed + self.dropped

    def to_dict(self) -> dict[str, int]:
        with self._lock:
            return {"exported": self.exported, "failed": self.failed, "dropped": self.dropped,
                    "queued": max(0, self.ended - self.taken - self.dropped)}


class CountingExporter(SpanExporter):
    """An exporter that counts what it sent and what failed, then logs losses (never the spans)."""

    def __init__(self, inner: SpanExporter, counters: Counters) -> None:
        self.inner = inner
        self.counters = counters

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self.counters._lock:
            self.counters.taken += len(spans)
        try:
            result = self.inner.export(spans)
        except Exception as exc:  # noqa: BLE001 - an exporter bug must not kill the export thread
            log.warning("Exporting %d trace spans failed: %s", len(spans), type(exc).__name__)
            result = SpanExportResult.FAILURE
        with self.counters._lock:
            if result is SpanExportResult.SUCCESS:
                self.counters.exported += len(spans)
            else:
                before = self.counters.lost()
                self.counters.failed += len(spans)
                _log_loss(before, self.counters)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


class BoundedBatchProcessor(BatchSpanProcessor):
    """The SDK's batch processor, counting the spans its full queue drops."""

    def __init__(self, exporter: CountingExporter, max_queue_size: int, **kwargs: Any) -> None:
        super().__init__(exporter, max_queue_size=max_queue_size,
                         max_export_batch_size=min(512, max_queue_size), **kwargs)
        self.counters = exporter.counters
        self.max_queue_size = max_queue_size

    def on_end(self, span: ReadableSpan) -> None:
        c = self.counters
        with c._lock:
            c.ended += 1
            if c.ended - c.taken - c.dropped > self.max_queue_size:  # the SDK drops the oldest one
                before = c.lost()
                c.dropped += 1
                _log_loss(before, c)
        super().on_end(span)


def _log_loss(before: int, counters: Counters) -> None:
    after = counters.lost()
    if before == 0 or after // LOSS_LOG_EVERY > before // LOSS_LOG_EVERY:
        log.warning("Trace spans lost so far: %d (%d dropped from a full queue, %d not accepted by the collector); "
                    "check tracing.otlp-endpoint, or raise tracing.queue-size.", after, counters.dropped,
                    counters.failed)


@dataclass(frozen=True)
class TracingConfig:
    endpoint: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    capture_content: bool = True
    queue_size: int = 2048
    export_timeout: float = 5.0
    service_name: str = "rag-workbench"
    project: str = ""  # openinference.project.name: the Phoenix project

    def __repr__(self) -> str:  # headers carry tokens
        return (f"TracingConfig(endpoint={self.endpoint!r}, headers=<{len(self.headers)}>, "
                f"capture_content={self.capture_content}, queue_size={self.queue_size})")


PROJECT = "openinference.project.name"  # the resource attribute Phoenix files traces by


@dataclass
class _State:
    provider: TracerProvider
    config: TracingConfig
    counters: Counters
    pinned: bool = False  # installed by hand (a test, an embedding program): settings do not replace it


_lock = threading.Lock()
_state: _State | None = None


def _provider(config: TracingConfig) -> TracerProvider:
    attributes = {"service.name": config.service_name}
    if config.project:
        attributes[PROJECT] = config.project
    return TracerProvider(resource=Resource.create(attributes), shutdown_on_exit=True)


def _current() -> _State:
    global _state
    state = _state
    if state is None:
        with _lock:
            if _state is None:
                config = TracingConfig()
                _state = _State(_provider(config), config, Counters())
            state = _state
    return state


def tracer() -> trace.Tracer:
    return _current().provider.get_tracer(SCOPE)


def capture_content() -> bool:
    return _current().config.capture_content


def stats() -> dict[str, Any]:
    """For the health route: whether spans are exported, where to (no headers), and what was lost."""
    state = _current()
    return {"exporting": bool(state.config.endpoint), "endpoint": state.config.endpoint or None,
            "capture_content": state.config.capture_content, **state.counters.to_dict()}


def install(config: TracingConfig, exporter: SpanExporter | None = None, *, simple: bool = False,
            pinned: bool = True) -> TracerProvider:
    """Make `config` the process's tracing, replacing the previous provider (which is shut down). `exporter`:
    instead of OTLP to `config.endpoint` (tests pass an in-memory one, with `simple` = export at each span end).
    `pinned`: `configure` (called whenever a workbench or agent is built) leaves it in place."""
    global _state
    counters = Counters()
    provider = _provider(config)
    if exporter is None and config.endpoint:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(endpoint=traces_url(config.endpoint), headers=dict(config.headers),
                                    timeout=config.export_timeout)
    if exporter is not None:
        counting = CountingExporter(exporter, counters)
        provider.add_span_processor(SimpleSpanProcessor(counting) if simple else
                                    BoundedBatchProcessor(counting, config.queue_size, schedule_delay_millis=500))
    with _lock:
        old, _state = _state, _State(provider, config, counters, pinned)
    if old is not None and old.provider is not provider:
        threading.Thread(target=old.provider.shutdown, name="rag-tracing-shutdown", daemon=True).start()
    return provider


def traces_url(endpoint: str) -> str:
    """A collector's base URL (`http://localhost:6006`) or its traces URL (`.../v1/traces`): the traces URL."""
    endpoint = endpoint.rstrip("/")
    return endpoint if endpoint.endswith("/v1/traces") else f"{endpoint}/v1/traces"


def config_from_settings(settings: Settings, env: Mapping[str, str] | None = None) -> TracingConfig:
    from opentelemetry.util.re import parse_env_headers

    env = os.environ if env is None else env
    headers_env = settings["tracing.headers-env"]
    raw = env.get(headers_env, "") if headers_env else ""
    return TracingConfig(endpoint=settings["tracing.otlp-endpoint"].strip(),
                         headers=parse_env_headers(raw, liberal=True) if raw else {},
                         capture_content=settings["tracing.capture-content"], queue_size=settings["tracing.queue-size"],
                         export_timeout=settings["tracing.export-timeout"],
                         service_name=settings["tracing.service-name"], project=settings["tracing.project"].strip())


def configure(settings: Settings, env: Mapping[str, str] | None = None) -> None:
    """The process's tracing from `settings` (`tracing.*`): the first call installs it; later calls with the same
    configuration change nothing (every workbench and agent built calls this), with another one replace it."""
    config = config_from_settings(settings, env)
    state = _current()
    if state.pinned or state.config == config:
        return
    install(config, pinned=False)

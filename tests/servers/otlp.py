"""An OpenTelemetry collector's OTLP/HTTP traces endpoint: `POST /v1/traces` with an `ExportTraceServiceRequest`
in protobuf, decoded with the `opentelemetry-proto` messages a collector uses, answered as a collector does.
`script(...)` / `always(...)` (FakeServer) make it hang (`Reply(delay=...)`) or answer 500."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from . import FakeServer, RecordedRequest, Reply

__all__ = ["OTLPReceiver", "ReceivedSpan"]


@dataclass(frozen=True)
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    attributes: dict[str, Any]
    resource: dict[str, Any]
    status_code: int
    status_message: str


def _value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, kind) if kind else None


class OTLPReceiver(FakeServer):
    @property
    def endpoint(self) -> str:
        return self.url

    def handle(self, request: RecordedRequest) -> Reply:
        if request.method != "POST" or request.path != "/v1/traces":
            return Reply.text(404, "404 page not found")
        if request.header("content-type") != "application/x-protobuf":
            return Reply.text(415, f"unsupported content type {request.header('content-type')!r}")
        ExportTraceServiceRequest.FromString(request.body)  # a body that does not decode is a 400, as a collector's
        return Reply(200, ExportTraceServiceResponse().SerializeToString(), {"Content-Type": "application/x-protobuf"})

    def spans(self) -> list[ReceivedSpan]:
        """Every span of every export request answered 200, in arrival order."""
        out = []
        for request in list(self.requests):
            if request.path != "/v1/traces":
                continue
            try:
                message = ExportTraceServiceRequest.FromString(request.body)
            except Exception:  # noqa: BLE001 - not a valid export: nothing received
                continue
            for rs in message.resource_spans:
                resource = {kv.key: _value(kv.value) for kv in rs.resource.attributes}
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        out.append(ReceivedSpan(s.name, s.trace_id.hex(), s.span_id.hex(), s.parent_span_id.hex(),
                                                {kv.key: _value(kv.value) for kv in s.attributes}, resource,
                                                s.status.code, s.status.message))
        return out

"""Traces of what the workbench does: OpenTelemetry spans with OpenInference's attribute names.

One chat turn is one trace (the agent span; each model call, tool call and lookup with its stages as children);
a `/v1/search` or a debugger lookup is one too. `setup` holds the process's provider and the OTLP export;
`spans` the helpers the agent, the lookup path and the remote clients use; `semconv` the attribute names.
"""

from . import semconv
from .setup import TracingConfig, capture_content, config_from_settings, configure, install, stats, tracer
from .spans import current, end, fail, set_attributes, set_content, span, stage, start, succeeded, trace_id, within

__all__ = ["TracingConfig", "capture_content", "config_from_settings", "configure", "current", "end", "fail", "install",
           "semconv", "set_attributes", "set_content", "span", "stage", "start", "stats", "succeeded", "trace_id",
           "tracer", "within"]

"""``InferenceTracer``: one span per inference, child spans for its phases, OTLP/HTTP export.

The tracer provider is the plane's own (never the process-global one), so two servers in
one process do not share exporters. A span's parent comes from W3C ``traceparent`` /
``tracestate`` (HTTP headers or gRPC metadata, as a dict). Attributes follow the GenAI
semantic conventions plus ``llm.model.name`` and ``llm.prompt.hash``; no text of a prompt or
an output is ever set on a span.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, set_span_in_context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

_PROPAGATOR = TraceContextTextMapPropagator()


class InferenceTracer:
    def __init__(self, service_name: str, otlp_endpoint: str | None = None) -> None:
        self.provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
        if otlp_endpoint:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            self.provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=otlp_endpoint),
                                                                schedule_delay_millis=500))
        self.tracer = self.provider.get_tracer("mcp.governance")

    def start(self, operation: str, model: str | None, carrier: Mapping[str, str],
              attributes: dict[str, Any]) -> Span:
        """The inference's span (kind SERVER), child of the caller's ``traceparent`` if any."""
        parent = _PROPAGATOR.extract(carrier={k.lower(): v for k, v in carrier.items()})
        return self.tracer.start_span(f"{operation} {model or 'default'}", context=parent, kind=SpanKind.SERVER,
                                      attributes={"gen_ai.operation.name": operation, **_clean(attributes)})

    def child(self, parent: Span, name: str, start_ns: int, end_ns: int,
              attributes: dict[str, Any] | None = None) -> None:
        """A finished phase of ``parent`` (its times already measured)."""
        span = self.tracer.start_span(name, context=set_span_in_context(parent), start_time=start_ns,
                                      kind=SpanKind.INTERNAL, attributes=_clean(attributes or {}))
        span.end(end_time=max(end_ns, start_ns))

    @staticmethod
    def end(span: Span, attributes: dict[str, Any], error_type: str | None = None) -> None:
        span.set_attributes(_clean(attributes))
        if error_type is not None:
            span.set_attribute("error.type", error_type)
            span.set_status(Status(StatusCode.ERROR, error_type))
        span.end()

    def shutdown(self) -> None:
        """Export what is still queued, then stop."""
        self.provider.shutdown()


def trace_id_of(span: Span) -> str:
    return format(span.get_span_context().trace_id, "032x")


def _clean(attributes: dict[str, Any]) -> dict[str, Any]:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in attributes.items() if v is not None}

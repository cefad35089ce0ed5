"""A real OTLP/HTTP trace receiver on 127.0.0.1: decodes each POST /v1/traces (protobuf) and
keeps the spans, with their attributes as plain values, and every raw body."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


class OTLPReceiver:
    def __init__(self) -> None:
        self.spans: list[dict] = []
        self.bodies: list[bytes] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.bodies.append(body)
                request = ExportTraceServiceRequest.FromString(body)
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        receiver.spans += [_span(span) for span in scope.spans]
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, predicate, timeout_s: float = 15.0) -> list[dict]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = [span for span in list(self.spans) if predicate(span)]
            if found:
                return found
            time.sleep(0.1)
        raise AssertionError(f"no exported span matched in {timeout_s} s; got {[s['name'] for s in self.spans]}")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _span(span) -> dict:
    return {"name": span.name, "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
            "parent_span_id": span.parent_span_id.hex(), "kind": span.kind,
            "attributes": {a.key: _value(a.value) for a in span.attributes}}


def _value(value):
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None

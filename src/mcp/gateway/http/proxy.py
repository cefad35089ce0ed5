"""One request through the gateway: resolve the route, send to the backend's pool, fall back
per the route's ``fallbacks`` when the pool fails, and pass the answer (or the stream) on.

The answer carries where it went: ``x-mcp-route``, ``x-mcp-arm``, ``x-mcp-pool``,
``x-mcp-member``, ``x-mcp-model``, ``x-mcp-attempts`` and, when one was taken,
``x-mcp-fallback`` (the reason); the server's ``x-mcp-ignored-fields`` and ``x-mcp-redactions``
are passed on. Each finished request of a split arm is recorded for the canary analysis: its latency, and whether
it failed (a 5xx, a pool failure, a fallback taken or a broken stream) or ran out of memory.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import anyio.to_thread
import httpx
from fastapi.responses import Response, StreamingResponse

from mcp.gateway.errors import RegistryError, UpstreamError
from mcp.gateway.http.context import ParsedRequest
from mcp.gateway.http.state import GatewayState
from mcp.gateway.pools.pool import InstancePool, UpstreamReply, UpstreamRequest
from mcp.gateway.routing.context import Backend, RouteDecision

FORWARDED_HEADERS = ("accept", "x-sla-class")
# the server's word on the answer (serving/http/fields.py, serving/redactions.py), relayed as it sent it
RELAYED_HEADERS = ("x-mcp-ignored-fields", "x-mcp-redactions")


@dataclass
class _Trace:
    """What the request went through, for the metrics, the canary window and the headers."""

    decision: RouteDecision
    started: float
    backend: Backend
    model_id: str = ""
    fallback: str | None = None
    oom: bool = False  # a failure on the way said "out of memory"

    def end(self, state: GatewayState, status: int, ok: bool) -> None:
        elapsed = time.perf_counter() - self.started
        route, arm = self.decision.route, self.decision.arm or ""
        state.metrics.requests.labels(route, arm, self.backend.instance_pool, str(status)).inc()
        state.metrics.request_latency.labels(route).observe(elapsed)
        if self.decision.arm is not None:
            state.window.record(route, arm, elapsed, ok and self.fallback is None, self.oom)

    def headers(self, reply: UpstreamReply) -> dict[str, str]:
        headers = {"x-mcp-route": self.decision.route, "x-mcp-arm": self.decision.arm or "",
                   "x-mcp-pool": self.backend.instance_pool, "x-mcp-member": reply.member.name,
                   "x-mcp-model": self.model_id, "x-mcp-attempts": str(reply.attempts)}
        if self.fallback:
            headers["x-mcp-fallback"] = self.fallback
        headers.update({name: reply.headers[name] for name in RELAYED_HEADERS if name in reply.headers})
        return headers


async def forward(state: GatewayState, parsed: ParsedRequest, path: str) -> Response:
    decision = state.router.resolve(parsed.ctx)
    state.metrics.decisions.labels(decision.route, decision.arm or "").inc()
    trace = _Trace(decision, time.perf_counter(), decision.backend)
    try:
        pool, reply = await _send_with_fallbacks(state, parsed, path, trace)
    except UpstreamError as exc:
        trace.end(state, exc.status, ok=False)
        raise
    if reply.response is None:
        trace.end(state, reply.status, ok=reply.status < 500)
        return Response(reply.body, status_code=reply.status, headers=trace.headers(reply),
                        media_type=reply.headers.get("content-type"))
    return StreamingResponse(_relay(state, pool, reply, trace), media_type=reply.headers.get("content-type"),
                             headers={**trace.headers(reply), "cache-control": "no-cache"})


async def _send_with_fallbacks(state: GatewayState, parsed: ParsedRequest, path: str,
                               trace: _Trace) -> tuple[InstancePool, UpstreamReply]:
    remaining = list(trace.decision.fallbacks)
    while True:
        try:
            return await _send(state, parsed, path, trace)
        except UpstreamError as exc:
            trace.oom = trace.oom or "out of memory" in str(exc).lower()
            fallback = next((f for f in remaining if exc.reason in f.on), None)
            if fallback is None:
                raise
            remaining = remaining[remaining.index(fallback) + 1:]
            state.metrics.fallbacks.labels(trace.decision.route, exc.reason).inc()
            trace.backend, trace.fallback = fallback.backend, exc.reason


async def _send(state: GatewayState, parsed: ParsedRequest, path: str,
                trace: _Trace) -> tuple[InstancePool, UpstreamReply]:
    backend = trace.backend
    pool = state.pools.get(backend.instance_pool)
    if pool is None:
        raise UpstreamError(f"route {trace.decision.route!r} sends to pool {backend.instance_pool!r}, which the "
                            f"gateway config does not define (pools: {', '.join(sorted(state.pools))})", "error", 502)
    trace.model_id = await _model_id(state, backend)
    headers = {"content-type": "application/json", "x-request-id": parsed.ctx.request_id or "",
               "x-tenant": parsed.ctx.tenant or ""}
    headers |= {name: parsed.ctx.headers[name] for name in FORWARDED_HEADERS if name in parsed.ctx.headers}
    request = UpstreamRequest(path, parsed.upstream_body(trace.model_id), headers, parsed.stream, parsed.prompt_head)
    return pool, await pool.send(request, backend.timeout_ms / 1000)


async def _model_id(state: GatewayState, backend: Backend) -> str:
    """``name:version``; a stage is looked up in the registry (cached, off the event loop)."""
    ref = backend.model
    if ref.version is not None:
        return f"{ref.name}:{ref.version}"
    if state.stages is None:
        raise UpstreamError(f"backend {ref} names a stage, and the gateway has no registry "
                            "(gateway.registry in its config)", "error", 502)
    try:
        return await anyio.to_thread.run_sync(state.stages.model_id, ref)
    except RegistryError as exc:
        raise UpstreamError(f"backend {ref}: {exc}", "error", 502) from None


async def _relay(state: GatewayState, pool: InstancePool, reply: UpstreamReply, trace: _Trace) -> AsyncIterator[bytes]:
    """The stream as it comes. Once its first bytes went out nothing is retried: a member that
    breaks off mid-stream ends it with an error event and ``[DONE]``."""
    broken: str | None = None
    try:
        yield reply.body
        async for chunk in reply.chunks:
            yield chunk
    except httpx.TransportError as exc:
        broken = f"{reply.member.name} broke off the stream: {type(exc).__name__}: {exc}"
        yield _sse_error(broken)
    finally:
        await reply.response.aclose()
        pool.finish(reply, ok=broken is None, error=broken)
        trace.end(state, 200, ok=broken is None)


def _sse_error(message: str) -> bytes:
    error = {"error": {"message": message, "type": "server_error", "param": None, "code": "upstream_broken"}}
    return f"data: {json.dumps(error)}\n\ndata: [DONE]\n\n".encode()

"""``/health`` (liveness, and the Argo Rollouts analysis probe), ``/ready``, ``/metrics``."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from mcp.base.errors import ModelNotFoundError
from mcp.serving.http import schemas as s
from mcp.serving.http.auth import state_of
from mcp.serving.http.openai_api import ERRORS
from mcp.serving.state import ServerState

router = APIRouter(tags=["operations"])


@router.get("/health", response_model=s.HealthResponse | s.ProbeResponse, responses=ERRORS)
async def health(metric: str | None = Query(None, description="latency_p50|p95|p99, ttft_p50|p95|p99, "
                                                                "error_rate, oom_count, throughput, request_rate"),
                 service: str | None = None, model: str | None = None, version: str | None = None,
                 window: str = "5m", threshold: float | None = None,
                 state: ServerState = Depends(state_of)) -> s.HealthResponse | s.ProbeResponse:
    """Liveness; with ``metric``, that metric over the window and whether it is healthy."""
    if metric is None:
        return s.HealthResponse(status="ok")
    if service is not None and service != state.config.serving.service_name:
        raise ModelNotFoundError(f"service {service!r} is not this server; it is "
                                 f"{state.config.serving.service_name!r} (serving.service_name)")
    result = state.probe.evaluate(metric, window, model, version, threshold)
    return s.ProbeResponse(metric=result.metric, value=result.value, healthy=result.healthy,
                           window_s=result.window_s, samples=result.samples)


@router.get("/ready", response_model=s.HealthResponse, responses={503: {"model": s.HealthResponse}})
async def ready(state: ServerState = Depends(state_of)):
    """200 once a model is loaded and while the server is not draining; 503 otherwise."""
    if state.draining:
        return JSONResponse({"status": "draining"}, status_code=503)
    if not state.host.ready:
        return JSONResponse({"status": "no model loaded"}, status_code=503)
    return s.HealthResponse(status="ready")


@router.get("/metrics", response_class=Response, responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}})
async def metrics(state: ServerState = Depends(state_of)) -> Response:
    """Prometheus text format (docs/api.md lists the metrics)."""
    return Response(generate_latest(state.metrics.registry), media_type=CONTENT_TYPE_LATEST)

"""``/health`` (liveness, and the Argo Rollouts analysis probe), ``/ready``, ``/metrics``."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from mcp.base.errors import ModelNotFoundError
from mcp.serving.http import schemas as s
from mcp.serving.http.auth import state_of
from mcp.serving.http.openai_api import ERRORS
from mcp.serving.probe import METRICS
from mcp.serving.state import ServerState

router = APIRouter(tags=["operations"])


@router.get("/health", response_model=s.HealthResponse | s.ProbeResponse, responses=ERRORS)
async def health(metric: str | None = Query(None, description="latency_p50|p95|p99, ttft_p50|p95|p99, "
                                                                "error_rate, oom_count, throughput, request_rate",
                                            json_schema_extra={"enum": list(METRICS)}),
                 service: str | None = None, model: str | None = None, version: str | None = None,
                 window: str = Query("5m", description="a duration: 30s, 5m, 1h, 500ms; at most 1h",
                                     json_schema_extra={"pattern": r"^\s*\d+(\.\d+)?(ms|s|m|h)?\s*$"}),
                 threshold: float | None = None,
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
    """Readiness: 200 once a model is loaded, while every loaded model can serve and the server
    is not draining; 503 otherwise, saying which model cannot serve and why. ``/health`` is
    liveness and stays 200 meanwhile: the process serves its other models and its API."""
    if state.draining:
        return JSONResponse({"status": "draining"}, status_code=503)
    if not state.host.current():
        return JSONResponse({"status": "no model loaded"}, status_code=503)
    problems = state.host.unservable()
    if problems:
        detail = "; ".join(f"{key}: {why}" for key, why in sorted(problems.items()))
        return JSONResponse({"status": f"not ready: {detail}"}, status_code=503)
    return s.HealthResponse(status="ready")


@router.get("/metrics", response_class=Response, responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}})
async def metrics(state: ServerState = Depends(state_of)) -> Response:
    """Prometheus text format (docs/api.md lists the metrics)."""
    return Response(generate_latest(state.metrics.registry), media_type=CONTENT_TYPE_LATEST)

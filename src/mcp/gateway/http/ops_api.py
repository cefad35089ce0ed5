"""``/health`` (the gateway is up, and its pools' members), ``/metrics`` (Prometheus)."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from mcp.gateway.http.state import GatewayState
from mcp.serving.http.auth import state_of

router = APIRouter(tags=["operations"])


@router.get("/health")
async def health(state: GatewayState = Depends(state_of)) -> dict:
    """``ok`` while every pool has a member whose breaker is not open; ``degraded`` otherwise."""
    pools = {name: pool.describe() for name, pool in state.pools.items()}
    usable = all(any(m["breaker"] != "open" for m in p["members"]) for p in pools.values())
    return {"status": "ok" if usable else "degraded", "table_sha256": state.router.table.sha256, "pools": pools}


@router.get("/metrics")
async def metrics(state: GatewayState = Depends(state_of)) -> Response:
    m = state.metrics
    for pool in state.pools.values():
        for member in pool.members:
            labels = (pool.name, member.name)
            m.breaker_state.labels(*labels).set(int(member.breaker.state))
            m.breaker_opened.labels(*labels).set(member.breaker.num_opened)
            m.outstanding.labels(*labels).set(member.outstanding)
            m.healthy.labels(*labels).set(int(member.healthy))
    return Response(generate_latest(m.registry), media_type=CONTENT_TYPE_LATEST)

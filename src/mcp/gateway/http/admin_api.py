"""``/admin``: where a request would go (``/admin/route``), the pools' members, and rollouts (start, status, promote, abort) for tenants with
the admin role. The same operations as ``mcp2026 rollout``, on the same registry tables."""

from __future__ import annotations

from functools import partial
from typing import Literal

import anyio.to_thread
from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field

from mcp.gateway.canary.plan import plan_for_route
from mcp.gateway.canary.records import DEFAULT_STEPS, Gates
from mcp.gateway.canary.store import RolloutStore
from mcp.gateway.errors import RolloutError
from mcp.gateway.http.app import refresh_weights
from mcp.gateway.http.context import parse_request
from mcp.gateway.http.state import GatewayState
from mcp.serving.http.auth import admin_of, state_of
from mcp.serving.tenants import Caller

router = APIRouter(prefix="/admin", tags=["admin"], dependencies=[Depends(admin_of)])


class StartRolloutRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    route: str = Field(min_length=1)
    canary_arm: str | None = None
    steps: list[int] = Field(default_factory=lambda: list(DEFAULT_STEPS), min_length=1)
    hold_s: float = Field(60.0, ge=0)
    min_requests: int = Field(50, ge=0)
    max_p95_ms: float = Field(800.0, gt=0)
    max_error_rate: float = Field(0.002, ge=0, le=1)
    max_oom: int = Field(0, ge=0)


class PromoteRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    full: bool = False  # straight to the end (100%, succeeded) instead of the next step


class AbortRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: str = "aborted by an operator"


@router.post("/route")
async def explain_route(request: Request, api: Literal["chat", "completions"] = "chat",
                        state: GatewayState = Depends(state_of), caller: Caller = Depends(admin_of)) -> dict:
    """Where this request body (with these headers, as this caller) would go: the route, the arm,
    the pool and the member picked now. Nothing is sent upstream."""
    parsed = parse_request(await request.body(), request.headers, caller.tenant.name, api == "chat",
                           state.config.chars_per_token)
    decision = state.router.resolve(parsed.ctx)
    pool = state.pools.get(decision.backend.instance_pool)
    member = pool.preview() if pool is not None else None
    return {"route": decision.route, "arm": decision.arm, "model": str(decision.backend.model),
            "pool": decision.backend.instance_pool, "member": member.name if member else None,
            "input_tokens": parsed.ctx.input_tokens, "is_default": decision.is_default,
            "fallbacks": [{"when": sorted(f.on), "model": str(f.backend.model), "pool": f.backend.instance_pool}
                          for f in decision.fallbacks], "table_sha256": decision.table_sha256}


@router.get("/pools")
async def pools(state: GatewayState = Depends(state_of)) -> dict:
    return {name: pool.describe() for name, pool in state.pools.items()}


@router.get("/rollouts")
async def list_rollouts(route: str | None = None, state: GatewayState = Depends(state_of)) -> dict:
    rollouts = await anyio.to_thread.run_sync(partial(_store(state).list, route))
    return {"data": [r.summary() for r in rollouts]}


@router.post("/rollouts")
async def start_rollout(body: StartRolloutRequest, state: GatewayState = Depends(state_of),
                        caller: Caller = Depends(admin_of)) -> dict:
    gates = Gates(body.max_p95_ms, body.max_error_rate, body.max_oom)
    plan = plan_for_route(state.router.watcher.table, body.route, body.canary_arm, tuple(body.steps), body.hold_s,
                          body.min_requests, gates)
    rollout = await anyio.to_thread.run_sync(partial(_store(state).start, plan, _actor(caller)))
    await anyio.to_thread.run_sync(refresh_weights, state)
    return rollout.summary()


@router.get("/rollouts/{rollout_id}")
async def rollout_status(rollout_id: int, state: GatewayState = Depends(state_of)) -> dict:
    store = _store(state)
    rollout = await anyio.to_thread.run_sync(store.get, rollout_id)
    events = await anyio.to_thread.run_sync(store.events, rollout_id)
    return {**rollout.summary(), "events": [e.summary() for e in events]}


@router.post("/rollouts/{rollout_id}/promote")
async def promote(rollout_id: int, body: PromoteRequest, state: GatewayState = Depends(state_of),
                  caller: Caller = Depends(admin_of)) -> dict:
    call = partial(_store(state).advance, rollout_id, full=body.full, actor=_actor(caller), kind="promote")
    rollout = await anyio.to_thread.run_sync(call)
    await anyio.to_thread.run_sync(refresh_weights, state)
    return rollout.summary()


@router.post("/rollouts/{rollout_id}/abort")
async def abort(rollout_id: int, body: AbortRequest, state: GatewayState = Depends(state_of),
                caller: Caller = Depends(admin_of)) -> dict:
    call = partial(_store(state).roll_back, rollout_id, body.reason, actor=_actor(caller), kind="abort")
    rollout = await anyio.to_thread.run_sync(call)
    await anyio.to_thread.run_sync(refresh_weights, state)
    return rollout.summary()


def _store(state: GatewayState) -> RolloutStore:
    if state.store is None:
        raise RolloutError("this gateway has no registry, so no rollouts; set gateway.registry in its config")
    return state.store


def _actor(caller: Caller) -> str:
    return f"tenant:{caller.tenant.name}"

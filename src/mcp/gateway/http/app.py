"""The gateway's FastAPI application and its background tasks.

While it runs: one health-check task per pool, and (with a registry) a canary task that ticks
the controller and lays the rollouts' weights over the routing table every ``canary.interval_s``.
Errors leave in OpenAI's format; a pool failure is 502 (error), 504 (timeout) or 429
(over capacity, with ``Retry-After``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from mcp.base.errors import MCPError
from mcp.gateway.errors import RolloutError, UnknownRolloutError, UpstreamError
from mcp.gateway.http.state import GatewayState
from mcp.gateway.pools.health import check_forever
from mcp.serving.errors import WireError, describe
from mcp.serving.http.errors import BodyLimit, error_response, http_error, unexpected_error, validation_error

log = logging.getLogger("mcp.gateway.http")


def create_app(state: GatewayState) -> BodyLimit:
    from mcp.gateway.http import admin_api, console_api, openai_api, ops_api

    app = FastAPI(title="MCP 2026 gateway", version="1", lifespan=_lifespan)
    app.state.server = state  # serving's auth dependencies find the tenants here
    for module in (openai_api, admin_api, ops_api, *((console_api,) if state.config.console else ())):
        app.include_router(module.router)
    app.add_exception_handler(MCPError, _mcp_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(Exception, unexpected_error)
    return _BodyLimit(app, state.config.max_body_bytes, state.config.body_timeout_s)


class _BodyLimit(BodyLimit):
    """serving's body limits, its messages naming the gateway's keys."""

    keys = ("gateway.max_body_bytes", "gateway.body_timeout_s")


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    state: GatewayState = app.state.server
    tasks = [asyncio.create_task(check_forever(pool), name=f"health-{pool.name}") for pool in state.pools.values()]
    if state.store is not None:
        await anyio.to_thread.run_sync(refresh_weights, state)
        tasks.append(asyncio.create_task(_canary_loop(state), name="canary"))
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await state.client.aclose()
        for member in (m for pool in state.pools.values() for m in pool.members if m.client is not None):
            await member.client.aclose()


async def _canary_loop(state: GatewayState) -> None:
    while True:
        await asyncio.sleep(state.config.canary_interval_s)
        try:
            await anyio.to_thread.run_sync(tick, state)
        except MCPError as exc:  # e.g. the database is down: the router keeps the last weights
            log.error("canary tick failed, weights unchanged: %s", exc)


def tick(state: GatewayState) -> None:
    """One controller pass (if this gateway runs the controller), then the new weights."""
    if state.controller is not None:
        state.controller.tick()
    refresh_weights(state)


def refresh_weights(state: GatewayState) -> None:
    newest = state.store.weights()
    state.router.set_weights({route: (r.plan.stable_arm, r.plan.canary_arm, r.weight) for route, r in newest.items()})
    for route, rollout in newest.items():
        state.metrics.rollout_weight.labels(route).set(rollout.weight)


async def _mcp_error(request: Request, exc: MCPError) -> JSONResponse:
    if isinstance(exc, UpstreamError):
        code = {"error": "upstream_error", "timeout": "upstream_timeout", "over_capacity": "over_capacity"}[exc.reason]
        retry = max(1, round(exc.retry_after_s or 1)) if exc.reason == "over_capacity" or exc.retry_after_s else None
        return error_response(WireError(exc.status, "server_error", code, "UNAVAILABLE", str(exc), None, retry))
    if isinstance(exc, RolloutError):
        status, code = (404, "rollout_not_found") if isinstance(exc, UnknownRolloutError) else (409, "rollout_conflict")
        return error_response(WireError(status, "invalid_request_error", code, "FAILED_PRECONDITION", str(exc)))
    return error_response(describe(exc))

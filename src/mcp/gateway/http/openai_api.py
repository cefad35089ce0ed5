"""``/v1/chat/completions``, ``/v1/completions`` (streams passed through as server-sent events)
and ``/v1/models`` (the models the routing file names)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from mcp.gateway.http.context import parse_request
from mcp.gateway.http.proxy import forward
from mcp.gateway.http.state import GatewayState
from mcp.gateway.routing.split import Split
from mcp.serving.http.auth import caller_of, state_of
from mcp.serving.tenants import Caller

router = APIRouter(tags=["openai"])


@router.post("/v1/chat/completions")
async def chat_completions(request: Request, state: GatewayState = Depends(state_of),
                           caller: Caller = Depends(caller_of)) -> Response:
    return await _proxy(request, state, caller, "/v1/chat/completions", chat=True)


@router.post("/v1/completions")
async def completions(request: Request, state: GatewayState = Depends(state_of),
                      caller: Caller = Depends(caller_of)) -> Response:
    return await _proxy(request, state, caller, "/v1/completions", chat=False)


@router.get("/v1/models")
async def list_models(state: GatewayState = Depends(state_of), caller: Caller = Depends(caller_of)) -> dict:
    table = state.router.table
    backends = []
    for route in (*table.routes, table.default):
        targets = [arm.backend for arm in route.target.arms] if isinstance(route.target, Split) else [route.target]
        backends += targets + [f.backend for f in route.fallbacks]
    ids = sorted({str(backend.model) for backend in backends})
    return {"object": "list", "data": [{"id": i, "object": "model", "created": 0, "owned_by": "mcp2026"} for i in ids]}


async def _proxy(request: Request, state: GatewayState, caller: Caller, path: str, chat: bool) -> Response:
    parsed = parse_request(await request.body(), request.headers, caller.tenant.name, chat,
                           state.config.chars_per_token)
    return await forward(state, parsed, path)

"""Which upstream answers a member's breaker counts (issue 28, finding 2): a 500 is the request's
own failure and goes back as it is; a 502/503/504 or a dead connection is the member's.

The member is a real ASGI application behind httpx's ASGI transport (the path a local member
takes); it answers 500 to a request it cannot handle, as ``mcp2026 serve`` does for a bug."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcp.gateway.errors import UpstreamError
from mcp.gateway.metrics import GatewayMetrics
from mcp.gateway.pools.breaker import BreakerState
from mcp.gateway.pools.pool import InstancePool, UpstreamRequest
from mcp.gateway.pools.spec import BreakerSpec, MemberSpec, PoolSpec


async def _completions(request: Request) -> JSONResponse:
    prompt = (await request.json())["prompt"]
    status = {"boom": 500, "down": 503}.get(prompt, 200)
    return JSONResponse({"error": {"message": prompt}} if status != 200 else {"choices": []}, status_code=status)


def _pool() -> InstancePool:
    spec = PoolSpec("p", (MemberSpec("m1", "http://m1.local"),), breaker=BreakerSpec(failure_threshold=2,
                                                                                     cool_down_s=300))
    app = Starlette(routes=[Route("/v1/completions", _completions, methods=["POST"])])
    pool = InstancePool(spec, httpx.AsyncClient(), GatewayMetrics())
    pool.members[0].client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app))
    return pool


def _request(prompt: str) -> UpstreamRequest:
    return UpstreamRequest("/v1/completions", f'{{"prompt": "{prompt}"}}'.encode(), {}, stream=False)


def test_a_500_goes_back_as_it_is_and_leaves_the_breaker_closed():
    async def run():
        pool = _pool()
        replies = [await pool.send(_request("boom"), 10) for _ in range(5)]
        member = pool.members[0]
        assert [r.status for r in replies] == [500] * 5 and all(r.attempts == 1 for r in replies)
        assert member.breaker.state == BreakerState.CLOSED and member.breaker.num_opened == 0
        assert member.num_failures == 5 and "500" in member.last_error and member.outstanding == 0
        assert (await pool.send(_request("fine"), 10)).status == 200

    asyncio.run(run())


def test_a_503_is_the_members_fault_and_opens_the_breaker():
    async def run():
        pool = _pool()
        for _ in range(2):
            with pytest.raises(UpstreamError) as failed:
                await pool.send(_request("down"), 10)
            assert failed.value.status == 502 and "m1: 503" in str(failed.value)
        assert pool.members[0].breaker.state == BreakerState.OPEN
        with pytest.raises(UpstreamError, match="no member to take the request"):
            await pool.send(_request("fine"), 10)

    asyncio.run(run())

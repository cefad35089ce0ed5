"""Active health checks, and the OOM count the canary controller asks ``mcp2026 serve`` members for.

Every ``interval_s`` each member gets ``GET {url}{path}``; anything but a 200 within
``timeout_s`` marks it unhealthy and counts as a failure on its breaker, so a dead member is
found even when no request is going to it. A 200 marks it healthy again (its breaker still
decides when requests return: after the cool-down, through half-open trials).
"""

from __future__ import annotations

import asyncio
import logging

import httpx

from mcp.gateway.pools.member import Member
from mcp.gateway.pools.pool import InstancePool

log = logging.getLogger(__name__)


async def check_forever(pool: InstancePool) -> None:
    while True:
        await check_once(pool)
        await asyncio.sleep(pool.spec.health.interval_s)


async def check_once(pool: InstancePool) -> None:
    await asyncio.gather(*(_check(pool, member) for member in pool.members))


async def _check(pool: InstancePool, member: Member) -> None:
    spec = pool.spec.health
    try:
        response = await (member.client or pool.client).get(member.spec.url + spec.path, timeout=spec.timeout_s)
        problem = None if response.status_code == 200 else f"health check answered {response.status_code}"
    except httpx.TransportError as exc:
        problem = f"health check failed: {type(exc).__name__}: {exc}"
    if problem is None:
        member.healthy = True
        return
    if member.healthy:
        log.warning("pool %s member %s is unhealthy: %s", pool.name, member.name, problem)
    member.healthy, member.last_error = False, problem
    member.breaker.record_failure()


def oom_count(pool: InstancePool, window_s: float) -> int:
    """The sum of ``/health?metric=oom_count`` over the pool's members (blocking; the controller
    runs in a worker thread). A member that does not answer adds nothing."""
    total = 0
    for member in pool.members:
        if member.spec.local:
            continue  # in this process: its failures are the gateway's own
        try:
            response = httpx.get(f"{member.spec.url}/health", params={"metric": "oom_count",
                                                                    "window": f"{min(3600, int(window_s) + 1)}s"},
                                 timeout=pool.spec.health.timeout_s)
            total += int(response.json()["value"]) if response.status_code == 200 else 0
        except (httpx.HTTPError, ValueError, KeyError) as exc:
            log.warning("pool %s member %s: OOM probe failed: %s", pool.name, member.name, exc)
    return total

"""One pool member: where it is, its breaker, its requests in flight, its last health check."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from mcp.gateway.pools.breaker import CircuitBreaker
from mcp.gateway.pools.spec import MemberSpec


@dataclass(eq=False)
class Member:
    spec: MemberSpec
    breaker: CircuitBreaker
    outstanding: int = 0  # guarded by the pool's lock
    healthy: bool = True  # the last active health check passed
    last_error: str | None = None
    num_requests: int = 0
    num_failures: int = 0
    client: httpx.AsyncClient | None = None  # a local member's in-process client; else the pool's

    @property
    def name(self) -> str:
        return self.spec.name

    def describe(self) -> dict:
        return {"name": self.name, "url": self.spec.url, "local": self.spec.local, "healthy": self.healthy,
                "breaker": self.breaker.state.name.lower(), "breaker_opened": self.breaker.num_opened,
                "outstanding": self.outstanding, "requests": self.num_requests, "failures": self.num_failures,
                "last_error": self.last_error}

"""A pool's settings, frozen (the gateway config file's ``pools:`` section, checked once)."""

from __future__ import annotations

from dataclasses import dataclass

from mcp.config.serving import ServedModel
from mcp.gateway.pools.prefix import PrefixPicking


@dataclass(frozen=True)
class MemberSpec:
    name: str
    url: str  # base URL, e.g. http://10.0.0.5:8000 (no /v1); a local member's is http://NAME.local
    local_models: tuple[ServedModel, ...] = ()  # a local member: these models, loaded in the gateway's process

    @property
    def local(self) -> bool:
        return bool(self.local_models)


@dataclass(frozen=True)
class HealthSpec:
    path: str = "/ready"  # readiness (503 while a model cannot serve); /v1/models for servers without it
    interval_s: float = 2.0
    timeout_s: float = 1.0


@dataclass(frozen=True)
class BreakerSpec:
    failure_threshold: int = 3  # consecutive failures that open the breaker
    cool_down_s: float = 5.0  # open this long, then half-open
    half_open_max: int = 1  # trial requests let through while half-open


@dataclass(frozen=True)
class PoolSpec:
    name: str
    members: tuple[MemberSpec, ...]
    health: HealthSpec = HealthSpec()
    breaker: BreakerSpec = BreakerSpec()
    max_attempts: int = 3  # members tried per request, each at most once
    connect_timeout_s: float = 2.0
    api_key: str | None = None  # sent upstream as "Authorization: Bearer"
    probe: bool = False  # members answer /health?metric= (mcp2026 serve): the canary asks them for OOMs
    picking: str = "least_outstanding"  # or "prefix": by the prompt's prefix, bounded by load (pools/prefix.py)
    prefix: PrefixPicking = PrefixPicking()

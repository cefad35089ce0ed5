"""What a routing decision reads, and what it returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

FALLBACK_REASONS = ("error", "timeout", "over_capacity")


@dataclass(frozen=True)
class RequestContext:
    """The facts of one request the routes may test. Header names are case-insensitive
    (kept lowercased); ``input_tokens`` is the prompt's token count."""

    tenant: str | None = None
    user_id: str | None = None
    user_tier: str | None = None
    sla_class: str | None = None
    input_tokens: int = 0
    model: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    metadata: Mapping[str, str] = field(default_factory=dict)
    request_id: str | None = None

    def __post_init__(self) -> None:
        lowered = {name.lower(): value for name, value in self.headers.items()}
        object.__setattr__(self, "headers", MappingProxyType(lowered))
        object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)))


@dataclass(frozen=True)
class ModelRef:
    """``name:version``, or ``name@stage`` (resolved through the registry when used)."""

    name: str
    version: str | None = None
    stage: str | None = None

    def __str__(self) -> str:
        return f"{self.name}:{self.version}" if self.version is not None else f"{self.name}@{self.stage}"


@dataclass(frozen=True)
class Backend:
    model: ModelRef
    instance_pool: str
    timeout_ms: int


@dataclass(frozen=True)
class Fallback:
    on: frozenset[str]  # subset of FALLBACK_REASONS
    backend: Backend


@dataclass(frozen=True)
class RouteDecision:
    """Where a request goes: the route taken, its backend (the split arm's, if it splits),
    and the fallbacks to try, in order, when that backend fails."""

    route: str
    backend: Backend
    arm: str | None
    fallbacks: tuple[Fallback, ...]
    is_default: bool
    table_sha256: str

    def fallback_for(self, reason: str, attempt: int = 0) -> Backend | None:
        """The ``attempt``-th fallback backend (0: first) that handles ``reason``, or None."""
        matching = [f.backend for f in self.fallbacks if reason in f.on]
        return matching[attempt] if attempt < len(matching) else None

"""``ServerState``: what one serving process shares between its transports and routes.

The HTTP routes, the gRPC service, the measured-launch check and the gateway's in-process pools
all take it, so it lives in serving itself, not in the HTTP app (the gRPC server used to import
it from there, a cycle hidden by a lazy import).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mcp.base.errors import ConfigError
from mcp.config.runtime import RuntimeConfig
from mcp.serving.host import ModelHost
from mcp.serving.metrics import ServingMetrics
from mcp.serving.probe import ProbeWindow
from mcp.serving.tenants import RateLimiter, TenantDirectory
from mcp.serving.vllm_metrics import VllmMetrics

if TYPE_CHECKING:
    from mcp.governance.attestation.attestor import Attestor
    from mcp.governance.plane import GovernancePlane

FAULT_DELAY_ENV = "MCP_FAULT_DELAY_MS"


@dataclass
class ServerState:
    """What the routes share: config, models, tenants, limits, metrics, the governance plane."""

    config: RuntimeConfig
    host: ModelHost
    tenants: TenantDirectory
    limiter: RateLimiter = field(default_factory=RateLimiter)
    probe: ProbeWindow = field(default_factory=ProbeWindow)
    metrics: ServingMetrics | None = None
    draining: bool = False  # SIGTERM received: /ready says no, in-flight requests finish
    fault_delay_s: float = field(default_factory=lambda: fault_delay_from_env())
    governance: GovernancePlane | None = None  # serving.governance: guardrails, audit, traces
    attestation: Attestor | None = None  # the attestation: section: measurement log, GET /attestation

    def __post_init__(self) -> None:
        self.metrics = ServingMetrics(self.host, self.probe)
        if self.config.serving.vllm_metrics:
            VllmMetrics(self.host, self.metrics.registry)
        if self.governance is not None:
            self.governance.register_metrics(self.metrics.registry)


def fault_delay_from_env() -> float:
    """A chaos/test knob: ``$MCP_FAULT_DELAY_MS`` delays every completion request by that many
    milliseconds before it starts, so a canary instance can be made slow on purpose."""
    text = os.environ.get(FAULT_DELAY_ENV, "").strip()
    if not text:
        return 0.0
    try:
        delay_ms = float(text)
    except ValueError:
        raise ConfigError(f"${FAULT_DELAY_ENV} is {text!r}; give a number of milliseconds, e.g. 500") from None
    if delay_ms < 0:
        raise ConfigError(f"${FAULT_DELAY_ENV} is {text}; give a number of milliseconds >= 0")
    return delay_ms / 1000

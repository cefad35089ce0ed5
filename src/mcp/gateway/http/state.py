"""What the gateway's routes share, and the router: the routing file's table with the rollouts'
weights laid over it."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import httpx

from mcp.gateway.canary.analysis import ArmWindow
from mcp.gateway.canary.controller import CanaryController
from mcp.gateway.canary.store import RolloutStore
from mcp.gateway.config import GatewayConfig
from mcp.gateway.metrics import GatewayMetrics
from mcp.gateway.pools.pool import InstancePool
from mcp.gateway.registry.registry import Registry
from mcp.gateway.routing.context import RequestContext, RouteDecision
from mcp.gateway.routing.overrides import ArmWeights, reweighted
from mcp.gateway.routing.stages import StageResolver
from mcp.gateway.routing.table import RouteTable
from mcp.gateway.routing.watcher import RouteTableWatcher
from mcp.serving.tenants import TenantDirectory

if TYPE_CHECKING:
    from mcp.gateway.pools.local import LocalMembers


class Router:
    """``resolve`` on the newest routing table with the rollout weights applied. The weighted
    table is rebuilt only when the file's table or the weights change, then swapped in whole."""

    def __init__(self, watcher: RouteTableWatcher) -> None:
        self.watcher = watcher
        self._lock = threading.Lock()
        self._weights: dict[str, ArmWeights] = {}
        self._built: tuple[RouteTable, dict[str, ArmWeights], RouteTable] = (watcher.table, {}, watcher.table)

    @property
    def table(self) -> RouteTable:
        base, weights, built = self._built
        if base is not self.watcher.table or weights is not self._weights:
            with self._lock:
                base, weights = self.watcher.table, self._weights
                built = reweighted(base, weights)
                self._built = (base, weights, built)
        return built

    def resolve(self, ctx: RequestContext) -> RouteDecision:
        return self.table.resolve(ctx)

    def set_weights(self, weights: dict[str, ArmWeights]) -> None:
        if weights != self._weights:
            self._weights = weights  # one reference store; ``table`` sees it on the next call

    @property
    def weights(self) -> dict[str, ArmWeights]:
        return self._weights


@dataclass
class GatewayState:
    config: GatewayConfig
    router: Router
    pools: dict[str, InstancePool]
    client: httpx.AsyncClient
    tenants: TenantDirectory
    metrics: GatewayMetrics
    window: ArmWindow = field(default_factory=ArmWindow)
    registry: Registry | None = None
    stages: StageResolver | None = None
    store: RolloutStore | None = None
    controller: CanaryController | None = None
    local: LocalMembers | None = None  # models loaded in this process for local pool members

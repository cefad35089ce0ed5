"""``mcp2026 gateway``: read the config and the routing file, check that every pool a route
names is configured, open the registry (if any), then serve until SIGTERM.

With no tenant keys configured the gateway runs open (every caller an admin) and binds
127.0.0.1 whatever the host, as ``mcp2026 serve`` does.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import httpx
import uvicorn

from mcp.gateway.canary.analysis import ArmWindow
from mcp.gateway.canary.controller import CanaryController
from mcp.gateway.canary.store import RolloutStore
from mcp.gateway.config import GatewayConfig, load_gateway_config
from mcp.gateway.errors import GatewayConfigError
from mcp.gateway.http.app import create_app
from mcp.gateway.http.state import GatewayState, Router
from mcp.gateway.metrics import GatewayMetrics
from mcp.gateway.pools.health import oom_count
from mcp.gateway.pools.pool import InstancePool
from mcp.gateway.registry.registry import Registry
from mcp.gateway.routing.split import Split
from mcp.gateway.routing.stages import StageResolver
from mcp.gateway.routing.table import RouteTable
from mcp.gateway.routing.watcher import RouteTableWatcher
from mcp.serving.http.protocol import with_header_deadline
from mcp.serving.tenants import TenantDirectory

log = logging.getLogger("mcp.gateway")
LOOPBACK = ("127.0.0.1", "localhost", "::1")
MAX_CONNECTIONS = 512


def run_gateway(config_path: Path, rules_path: Path, host: str | None = None, port: int | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per upstream request
    config = _bind_address(load_gateway_config(config_path), host, port)
    watcher = RouteTableWatcher(rules_path, config.rules_poll_s)
    check_pools(watcher.table, config)
    state = build_state(config, watcher)
    watcher.start()
    try:
        uvicorn.run(create_app(state), host=config.host, port=config.port, log_level="info", access_log=False,
                    http=with_header_deadline(config.header_timeout_s))
    finally:
        watcher.stop()
        if state.registry is not None:
            state.registry.close()
        if state.local is not None:
            state.local.close()
    return 0


def build_state(config: GatewayConfig, watcher: RouteTableWatcher) -> GatewayState:
    limits = httpx.Limits(max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_CONNECTIONS)
    client = httpx.AsyncClient(limits=limits, timeout=None)
    metrics = GatewayMetrics()
    pools = {spec.name: InstancePool(spec, client, metrics) for spec in config.pools}
    state = GatewayState(config, Router(watcher), pools, client, TenantDirectory(config.tenants), metrics,
                         ArmWindow())
    _load_local_members(state)
    if config.registry_url is not None:
        state.registry = Registry.open(config.registry_url, actor="gateway")
        state.stages = StageResolver(state.registry)
        state.store = RolloutStore(state.registry)
        if config.canary_controller:
            probe = _oom_probe(pools)
            state.controller = CanaryController(state.store, state.window, probe)
    return state


def _load_local_members(state: GatewayState) -> None:
    """Load the models of local members (torch and the engine are imported only if there are any)."""
    local = [m for pool in state.pools.values() for m in pool.members if m.spec.local]
    if not local:
        return
    from mcp.gateway.pools.local import LocalMembers

    state.local = LocalMembers()
    for member in local:
        state.local.attach(member)


def check_pools(table: RouteTable, config: GatewayConfig) -> None:
    """Every pool the routing file names must be in the config: a typo fails at start, not per request."""
    known = {pool.name for pool in config.pools}
    missing = sorted({b.instance_pool for b in _backends(table)} - known)
    if missing:
        raise GatewayConfigError(f"{table.source} names pool(s) {', '.join(missing)} that the gateway config does "
                                 f"not define (pools: {', '.join(sorted(known))})")


def _backends(table: RouteTable):
    for route in (*table.routes, table.default):
        yield from (arm.backend for arm in route.target.arms) if isinstance(route.target, Split) else (route.target,)
        yield from (fallback.backend for fallback in route.fallbacks)


def _oom_probe(pools: dict[str, InstancePool]):
    def probe(pool_name: str, window_s: float) -> int:
        pool = pools.get(pool_name)
        return oom_count(pool, window_s) if pool is not None and pool.spec.probe else 0
    return probe


def _bind_address(config: GatewayConfig, host: str | None, port: int | None) -> GatewayConfig:
    config = replace(config, host=host or config.host, port=config.port if port is None else port)
    if config.tenants:
        return config
    if config.host not in LOOPBACK:
        log.warning("no API keys are configured (gateway.tenants): binding 127.0.0.1 instead of %s", config.host)
        config = replace(config, host="127.0.0.1")
    log.warning("running OPEN: no API keys are configured, every caller is an admin")
    return config

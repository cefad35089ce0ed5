"""A rollout plan from a routing table: the split route, which arm is the canary, their backends."""

from __future__ import annotations

from mcp.gateway.canary.records import DEFAULT_STEPS, Gates, RolloutPlan
from mcp.gateway.errors import RolloutError
from mcp.gateway.routing.split import Split
from mcp.gateway.routing.table import RouteTable


def plan_for_route(table: RouteTable, route: str, canary_arm: str | None = None,
                   steps: tuple[int, ...] = DEFAULT_STEPS, hold_s: float = 60.0, min_requests: int = 50,
                   gates: Gates = Gates()) -> RolloutPlan:
    """The route must split between exactly two arms; the canary is ``canary_arm``, else the arm
    named ``canary``, else the second one."""
    found = next((r for r in (*table.routes, table.default) if r.name == route), None)
    if found is None:
        names = ", ".join(r.name for r in table.routes) or "none"
        raise RolloutError(f"no route {route!r} in {table.source} (routes: {names})")
    if not isinstance(found.target, Split) or len(found.target.arms) != 2:
        raise RolloutError(f"route {route!r} must split between exactly two arms (a stable and a canary) "
                           "to be rolled out; give it split: with two arms")
    arms = {arm.name: arm for arm in found.target.arms}
    canary_name = canary_arm or ("canary" if "canary" in arms else found.target.arms[1].name)
    if canary_name not in arms:
        raise RolloutError(f"route {route!r} has no arm {canary_name!r} (arms: {', '.join(arms)})")
    canary = arms.pop(canary_name)
    stable = next(iter(arms.values()))
    return RolloutPlan(route, stable.name, canary.name, str(stable.backend.model), str(canary.backend.model),
                       stable.backend.instance_pool, canary.backend.instance_pool, tuple(steps), hold_s,
                       min_requests, gates)

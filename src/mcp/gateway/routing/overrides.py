"""A table with some splits re-weighted: how a canary rollout steers the router.

``reweighted(table, {route: (stable_arm, canary_arm, canary_percent)})`` gives a new table in
which each named two-arm split gives ``canary_percent`` to the canary arm and the rest to the
stable arm. Arms keep their order, so the sticky guarantee holds: as the canary grows, only the
users in the band between the old and the new boundary move, all onto the canary.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace

from mcp.gateway.routing.split import Split, arm_bounds
from mcp.gateway.routing.table import Route, RouteTable

log = logging.getLogger(__name__)
ArmWeights = tuple[str, str, int]  # stable arm, canary arm, canary percent


def reweighted(table: RouteTable, weights: Mapping[str, ArmWeights]) -> RouteTable:
    if not weights:
        return table
    routes = tuple(_route(route, weights.get(route.name)) for route in table.routes)
    return replace(table, routes=routes, default=_route(table.default, weights.get(table.default.name)))


def _route(route: Route, weights: ArmWeights | None) -> Route:
    if weights is None:
        return route
    stable, canary, percent = weights
    split = route.target
    if not isinstance(split, Split) or {arm.name for arm in split.arms} != {stable, canary}:
        log.warning("route %r no longer has the two arms %r and %r; its rollout weight is not applied",
                    route.name, stable, canary)
        return route
    new = {stable: 100 - percent, canary: percent}
    bounds = arm_bounds([new[arm.name] for arm in split.arms])
    arms = tuple(replace(arm, weight=float(new[arm.name]), end_bucket=end) for arm, end in zip(split.arms, bounds))
    return replace(route, target=replace(split, arms=arms))

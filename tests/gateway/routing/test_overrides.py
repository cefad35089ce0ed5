"""Rollout weights laid over a routing table: the split re-weighted, the sticky band kept."""

from __future__ import annotations

from mcp.gateway.routing import RequestContext, parse_route_table
from mcp.gateway.routing.overrides import reweighted

TABLE = parse_route_table("""
routes:
  - name: support
    conditions: {model: bot}
    split:
      arms:
        - {name: stable, weight: 100, backend: {model_id: "bot:1", instance_pool: a}}
        - {name: canary, weight: 0, backend: {model_id: "bot:2", instance_pool: b}}
default: {backend: {model_id: "bot:1"}}
""")


def _arms(table, num_users: int = 4000) -> dict[str, str]:
    return {f"u{i}": table.resolve(RequestContext(model="bot", user_id=f"u{i}")).arm for i in range(num_users)}


def test_canary_users_only_grow_as_the_weight_steps_up():
    previous: set[str] = set()
    for weight in (5, 20, 50, 100):
        arms = _arms(reweighted(TABLE, {"support": ("stable", "canary", weight)}))
        on_canary = {user for user, arm in arms.items() if arm == "canary"}
        assert previous <= on_canary  # nobody leaves the canary as it grows
        assert abs(len(on_canary) / len(arms) - weight / 100) < 0.03
        previous = on_canary


def test_weights_for_unknown_routes_or_arms_leave_the_table_as_it_is():
    assert _arms(reweighted(TABLE, {"other": ("stable", "canary", 50)})) == _arms(TABLE)
    assert set(_arms(reweighted(TABLE, {"support": ("stable", "green", 50)})).values()) == {"stable"}
    assert reweighted(TABLE, {}) is TABLE

"""Rollouts in the registry, on SQLite and PostgreSQL: steps, success, rollback, abort, the
one-running-per-route rule, deployments and stages kept in step, and state that outlives the
process that wrote it."""

from __future__ import annotations

import pytest

from mcp.gateway.canary.records import Gates, RolloutPlan
from mcp.gateway.canary.store import RolloutStore
from mcp.gateway.errors import RolloutError, UnknownRolloutError, UnknownVersionError
from mcp.gateway.registry.registry import Registry
from mcp.gateway.registry.stages import Stage

PLAN = RolloutPlan("support", "stable", "canary", "bot:1", "bot:2", "pool-a", "pool-b", (5, 20, 50, 100), 0.0, 1)


@pytest.fixture
def store(registry: Registry, artifact) -> RolloutStore:
    registry.register(artifact, "bot", "1", Stage.PRODUCTION)
    registry.register(artifact, "bot", "2")
    return RolloutStore(registry)


def test_start_moves_the_canary_to_its_stage_and_records_deployments(store, registry):
    rollout = store.start(PLAN, actor="alice")
    assert (rollout.status, rollout.step_index, rollout.weight, rollout.created_by) == ("running", 0, 5, "alice")
    assert registry.get("bot", "2").stage == Stage.CANARY
    [canary] = registry.deployments("bot", "2")
    [stable] = registry.deployments("bot", "1")
    assert (canary.instance_pool, canary.role, canary.traffic_percent) == ("pool-b", "canary", 5)
    assert (stable.instance_pool, stable.role, stable.traffic_percent) == ("pool-a", "stable", 95)
    start, deployment = registry.changes("bot:2")[-2:]
    assert (start.action, start.actor, deployment.action) == ("rollout.start", "alice", "deployment.set")
    assert registry.changes("bot:1")[-1].after["traffic_percent"] == 95


def test_steps_walk_to_100_then_the_canary_is_production(store, registry):
    rollout = store.start(PLAN)
    weights = [rollout.weight]
    while rollout.running:
        rollout = store.advance(rollout.id, rollout.step_index)
        weights.append(rollout.weight)
    assert weights == [5, 20, 50, 100, 100]
    assert rollout.status == "succeeded"
    assert registry.get("bot", "2").stage == Stage.PRODUCTION
    assert registry.get("bot", "1").stage == Stage.ARCHIVED
    kinds = [e.kind for e in store.events(rollout.id)]
    assert kinds == ["start", "step", "step", "step", "succeed"]


def test_a_stale_controller_move_changes_nothing(store):
    rollout = store.start(PLAN)
    store.advance(rollout.id, expect_step=0)
    again = store.advance(rollout.id, expect_step=0)  # a second controller that saw step 0
    assert (again.step_index, again.weight) == (1, 20)


def test_rollback_and_abort_end_at_weight_zero_with_the_reason(store, registry):
    rollout = store.start(PLAN)
    rolled = store.roll_back(rollout.id, "analysis failed: p95 latency 1500 ms > 800 ms", {"failures": ["p95"]})
    assert (rolled.status, rolled.weight, rolled.reason) == ("rolled_back", 0, "analysis failed: p95 latency 1500 ms > 800 ms")
    assert registry.deployments("bot", "2")[0].traffic_percent == 0
    assert registry.get("bot", "2").stage == Stage.STAGING  # the model's canary stage is free again
    with pytest.raises(RolloutError, match=r"rollout #\d+ has ended \(rolled_back"):
        store.advance(rollout.id)
    second = store.start(PLAN)
    aborted = store.roll_back(second.id, "operator said so", kind="abort", actor="bob")
    assert aborted.status == "aborted"
    assert store.events(second.id)[-1].actor == "bob"


def test_one_running_rollout_per_route(store):
    first = store.start(PLAN)
    with pytest.raises(RolloutError, match=rf"route 'support' already has a running rollout \(#{first.id}\)"):
        store.start(PLAN)


def test_weights_are_the_newest_rollout_of_each_route(store):
    first = store.start(PLAN)
    store.roll_back(first.id, "bad")
    second = store.start(PLAN)
    store.advance(second.id)
    assert {route: r.weight for route, r in store.weights().items()} == {"support": 20}
    assert store.weights()["support"].id == second.id


def test_state_survives_a_new_process(store, registry_url):
    rollout = store.start(PLAN)
    store.advance(rollout.id)
    with Registry.open(registry_url) as reopened:
        again = RolloutStore(reopened).get(rollout.id)
    assert (again.status, again.step_index, again.weight, again.plan) == ("running", 1, 20, PLAN)


def test_bad_plans_and_unknown_things_are_clear_errors(store):
    with pytest.raises(RolloutError, match="must rise strictly from above 0 to 100"):
        store.start(RolloutPlan(**{**PLAN.__dict__, "steps": (50, 20, 100)}))
    with pytest.raises(UnknownVersionError, match="model 'bot' has no version '9'"):
        store.start(RolloutPlan(**{**PLAN.__dict__, "canary_model": "bot:9"}))
    with pytest.raises(UnknownRolloutError, match="no rollout #999"):
        store.get(999)


def test_gates_round_trip(store):
    plan = RolloutPlan(**{**PLAN.__dict__, "gates": Gates(250.0, 0.01, 2)})
    assert store.get(store.start(plan).id).plan.gates == Gates(250.0, 0.01, 2)

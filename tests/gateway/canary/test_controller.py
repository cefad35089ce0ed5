"""The controller on the real store (SQLite and PostgreSQL) and a window of recorded requests:
it holds, steps, and rolls back at the first failed analysis."""

from __future__ import annotations

import time

import pytest

from mcp.gateway.canary.analysis import ArmWindow
from mcp.gateway.canary.controller import CanaryController
from mcp.gateway.canary.records import Gates, RolloutPlan
from mcp.gateway.canary.store import RolloutStore
from mcp.gateway.registry.stages import Stage

HOLD_S = 0.3


@pytest.fixture
def parts(registry, artifact):
    registry.register(artifact, "bot", "1", Stage.PRODUCTION)
    registry.register(artifact, "bot", "2")
    store, window = RolloutStore(registry), ArmWindow()
    return store, window, CanaryController(store, window)


def _plan(**changes) -> RolloutPlan:
    base = dict(route="support", stable_arm="stable", canary_arm="canary", stable_model="bot:1",
                canary_model="bot:2", stable_pool="a", canary_pool="b", steps=(5, 50, 100), hold_s=HOLD_S,
                min_requests=20, gates=Gates())
    return RolloutPlan(**{**base, **changes})


def _traffic(window: ArmWindow, num: int, canary_s: float, canary_errors: int = 0) -> None:
    for i in range(num):
        window.record("support", "stable", 0.05, ok=True)
        window.record("support", "canary", canary_s, ok=i >= canary_errors)


def test_a_healthy_canary_holds_each_step_then_reaches_100(parts):
    store, window, controller = parts
    rollout = store.start(_plan())
    weights = [rollout.weight]
    for _ in range(len(rollout.plan.steps)):
        _traffic(window, 19, 0.1)
        assert controller.tick() == []  # 19 canary requests: too few to judge
        _traffic(window, 1, 0.1)
        assert controller.tick() == []  # enough requests, but the step has not lasted hold_s
        time.sleep(HOLD_S)
        [after] = controller.tick()
        weights.append(after.weight)
    assert weights == [5, 50, 100, 100] and after.status == "succeeded"
    analyses = [e for e in store.events(rollout.id) if e.kind == "analysis"]
    assert [e.passed for e in analyses] == [True, True, True]
    assert analyses[1].detail["canary"]["requests"] == 20  # each step counts its own requests
    assert analyses[0].detail["stable"]["p95_ms"] == 50.0


def test_slow_canary_rolls_back_at_the_first_failed_analysis(parts):
    store, window, controller = parts
    rollout = store.start(_plan(hold_s=3600.0))
    _traffic(window, 20, 1.5)
    [after] = controller.tick()  # no waiting for the hold: a failure ends it at once
    assert (after.status, after.weight) == ("rolled_back", 0)
    assert after.reason == "analysis failed: p95 latency 1500 ms > 800 ms (stable 50 ms)"
    assert store.events(rollout.id)[-2].passed is False


def test_errors_at_or_above_the_rate_roll_back(parts):
    store, window, controller = parts
    store.start(_plan(gates=Gates(max_error_rate=0.05)))
    _traffic(window, 20, 0.1, canary_errors=1)  # 5%: not below 5%
    [after] = controller.tick()
    assert after.reason == "analysis failed: error rate 5.00% (1/20) >= 5.00% (stable 0.00%)"


def test_ooms_reported_by_the_probe_roll_back(parts):
    store, window, _ = parts
    controller = CanaryController(store, window, oom_probe=lambda pool, window_s: 1 if pool == "b" else 0)
    store.start(_plan())
    _traffic(window, 20, 0.1)
    [after] = controller.tick()
    assert after.reason == "analysis failed: 1 OOM(s) > 0"


def test_requests_before_the_step_began_do_not_count(parts):
    store, window, controller = parts
    _traffic(window, 50, 2.0)  # slow, but before the rollout started
    time.sleep(0.01)
    store.start(_plan(hold_s=0.0))
    assert controller.tick() == []

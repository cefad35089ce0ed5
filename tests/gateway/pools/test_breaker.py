"""The circuit breaker's states on a clock the test moves."""

from __future__ import annotations

from mcp.gateway.pools.breaker import BreakerState, CircuitBreaker
from mcp.gateway.pools.spec import BreakerSpec


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _breaker(clock: Clock, threshold: int = 3, cool_down_s: float = 5.0, half_open_max: int = 1) -> CircuitBreaker:
    return CircuitBreaker(BreakerSpec(threshold, cool_down_s, half_open_max), clock)


def test_opens_after_consecutive_failures_only():
    breaker = _breaker(Clock())
    breaker.record_failure()
    breaker.record_failure()
    breaker.record_success()  # the run of failures is broken
    breaker.record_failure()
    breaker.record_failure()
    assert breaker.state == BreakerState.CLOSED and breaker.try_acquire()
    breaker.record_failure()
    assert breaker.state == BreakerState.OPEN and breaker.num_opened == 1
    assert not breaker.try_acquire()


def test_half_open_after_cool_down_lets_limited_trials_through():
    clock = Clock()
    breaker = _breaker(clock, threshold=1, cool_down_s=5.0, half_open_max=2)
    breaker.record_failure()
    clock.now += 4.9
    assert not breaker.try_acquire()
    clock.now += 0.2
    assert breaker.state == BreakerState.HALF_OPEN
    assert breaker.try_acquire() and breaker.try_acquire()
    assert not breaker.try_acquire()  # two trials in flight
    breaker.record_success()
    assert breaker.state == BreakerState.CLOSED and breaker.try_acquire()


def test_a_failed_trial_opens_it_again_for_a_full_cool_down():
    clock = Clock()
    breaker = _breaker(clock, threshold=2, cool_down_s=1.0)
    breaker.record_failure()
    breaker.record_failure()
    clock.now += 1.0
    assert breaker.try_acquire()
    breaker.record_failure()
    assert breaker.state == BreakerState.OPEN and breaker.num_opened == 2
    clock.now += 0.5
    assert not breaker.try_acquire()
    clock.now += 0.5
    assert breaker.try_acquire()

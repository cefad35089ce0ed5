"""A circuit breaker per pool member: closed -> open -> half-open -> closed.

Closed: requests flow; ``failure_threshold`` failures in a row open it. Open: no requests for
``cool_down_s``, then half-open. Half-open: up to ``half_open_max`` trial requests at a time; a
success closes it, a failure opens it for another cool-down.
"""

from __future__ import annotations

import threading
import time
from enum import IntEnum

from mcp.gateway.pools.spec import BreakerSpec


class BreakerState(IntEnum):  # the values of the mcp_gateway_breaker_state gauge
    CLOSED = 0
    HALF_OPEN = 1
    OPEN = 2


class CircuitBreaker:
    def __init__(self, spec: BreakerSpec, clock=time.monotonic) -> None:
        self.spec = spec
        self._clock = clock
        self._lock = threading.Lock()
        self._state = BreakerState.CLOSED
        self._failures = 0
        self._opened_at = 0.0
        self._trials = 0
        self.num_opened = 0

    @property
    def state(self) -> BreakerState:
        with self._lock:
            self._cool_down_over()
            return self._state

    def try_acquire(self) -> bool:
        """May a request go to this member now? A half-open trial takes a slot until its result."""
        with self._lock:
            self._cool_down_over()
            if self._state == BreakerState.CLOSED:
                return True
            if self._state == BreakerState.HALF_OPEN and self._trials < self.spec.half_open_max:
                self._trials += 1
                return True
            return False

    def record_success(self) -> None:
        with self._lock:
            self._failures, self._trials = 0, max(0, self._trials - 1)
            self._state = BreakerState.CLOSED

    def record_failure(self) -> None:
        with self._lock:
            self._failures += 1
            self._trials = max(0, self._trials - 1)
            if self._state == BreakerState.HALF_OPEN or self._failures >= self.spec.failure_threshold:
                if self._state != BreakerState.OPEN:
                    self.num_opened += 1
                self._state, self._opened_at = BreakerState.OPEN, self._clock()

    def _cool_down_over(self) -> None:
        if self._state == BreakerState.OPEN and self._clock() - self._opened_at >= self.spec.cool_down_s:
            self._state, self._trials = BreakerState.HALF_OPEN, 0

"""Arrival processes: when each request is sent, in seconds from the start of the run.

Poisson(λ) and gamma with a burstiness factor as vLLM's ``bench serve`` defines them: the
gaps between arrivals are Gamma(shape=burstiness, scale=1/(λ·burstiness)), so their mean is
1/λ whatever the burstiness; burstiness 1 is Poisson, below 1 burstier, above 1 steadier.

A rate that changes over time (the bursty scenario's window at ×3) uses time rescaling: the
gaps are drawn with unit mean in "operational time" u and mapped back by the inverse of the
cumulative rate Λ(t) = ∫ λ(s) ds, which gives exactly λ(t) arrivals per second at every t.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mcp.base.errors import InvalidRequestError


@dataclass(frozen=True)
class RateProfile:
    """λ(t): ``base_rate`` requests/s, times ``burst_factor`` inside [burst_start_s, burst_end_s)."""

    base_rate: float
    burst_start_s: float = 0.0
    burst_end_s: float = 0.0
    burst_factor: float = 1.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.base_rate) and self.base_rate > 0):
            raise InvalidRequestError(f"rate must be a positive number of requests/s, got {self.base_rate}")
        if not (self.burst_factor > 0 and 0 <= self.burst_start_s <= self.burst_end_s):
            raise InvalidRequestError(
                f"burst window [{self.burst_start_s}, {self.burst_end_s}) x{self.burst_factor} is invalid; "
                "give 0 <= start <= end and a positive factor")

    def rate_at(self, t: float) -> float:
        inside = self.burst_start_s <= t < self.burst_end_s
        return self.base_rate * (self.burst_factor if inside else 1.0)

    def cumulative(self, t: float) -> float:
        """Λ(t): the expected number of arrivals in [0, t)."""
        burst = max(0.0, min(t, self.burst_end_s) - self.burst_start_s)
        return self.base_rate * (t + (self.burst_factor - 1.0) * burst)

    def inverse(self, u: float) -> float:
        """The t with Λ(t) = u."""
        before = self.cumulative(self.burst_start_s)
        if u <= before:
            return u / self.base_rate
        inside = self.cumulative(self.burst_end_s)
        if u <= inside:
            return self.burst_start_s + (u - before) / (self.base_rate * self.burst_factor)
        return self.burst_end_s + (u - inside) / self.base_rate


def arrival_times(
    profile: RateProfile,
    burstiness: float,
    rng: np.random.Generator,
    *,
    max_count: int | None = None,
    max_time_s: float | None = None,
) -> list[float]:
    """Arrival times in [0, max_time_s), the first at 0, at most ``max_count`` of them; one bound is needed."""
    if not (math.isfinite(burstiness) and burstiness > 0):
        raise InvalidRequestError(f"burstiness must be a positive number (1 = Poisson), got {burstiness}")
    if max_count is None and max_time_s is None:
        raise InvalidRequestError("give a number of requests or a duration; the arrivals need a bound")
    times: list[float] = []
    operational = 0.0
    while max_count is None or len(times) < max_count:
        # the first request at once, then gaps of unit mean in operational time
        for gap in rng.gamma(shape=burstiness, scale=1.0 / burstiness, size=256):
            t = profile.inverse(operational)
            if (max_time_s is not None and t >= max_time_s) or (max_count is not None and len(times) >= max_count):
                return times
            times.append(t)
            operational += float(gap)
    return times

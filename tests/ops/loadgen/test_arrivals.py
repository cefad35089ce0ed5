"""Arrival processes: their rates and shapes, measured over many seeded samples."""

from __future__ import annotations

import numpy as np
import pytest

from mcp.base.errors import InvalidRequestError
from mcp.ops.loadgen.arrivals import RateProfile, arrival_times


def gaps(times: list[float]) -> np.ndarray:
    assert times[0] == 0.0  # the first request goes at once
    return np.diff(times)


@pytest.mark.parametrize("burstiness", [1.0, 0.25, 4.0])
def test_mean_rate_is_the_rate_whatever_the_burstiness(burstiness):
    times = arrival_times(RateProfile(5.0), burstiness, np.random.default_rng(1), max_count=40_000)
    assert len(times) == 40_000
    assert np.mean(gaps(times)) == pytest.approx(0.2, rel=0.03)
    assert all(b >= a for a, b in zip(times, times[1:]))  # very bursty gaps can round to 0


@pytest.mark.parametrize("burstiness", [1.0, 0.25, 4.0])
def test_gap_variability_follows_burstiness(burstiness):
    # Gamma(k, θ) has CV² = 1/k: burstiness 0.25 is 4x as variable as Poisson, 4 is a quarter
    g = gaps(arrival_times(RateProfile(2.0), burstiness, np.random.default_rng(2), max_count=40_000))
    assert np.var(g) / np.mean(g) ** 2 == pytest.approx(1 / burstiness, rel=0.08)


def test_duration_bound_and_count_bound():
    times = arrival_times(RateProfile(10.0), 1.0, np.random.default_rng(3), max_time_s=100.0)
    assert max(times) < 100.0
    assert len(times) == pytest.approx(1000, rel=0.1)
    capped = arrival_times(RateProfile(10.0), 1.0, np.random.default_rng(3), max_count=50, max_time_s=100.0)
    assert capped == times[:50]


def test_burst_window_has_three_times_the_rate():
    profile = RateProfile(4.0, burst_start_s=400.0, burst_end_s=600.0, burst_factor=3.0)
    times = np.array(arrival_times(profile, 1.0, np.random.default_rng(4), max_time_s=1000.0))
    inside = np.sum((times >= 400) & (times < 600)) / 200.0
    outside = np.sum((times < 400) | (times >= 600)) / 800.0
    assert outside == pytest.approx(4.0, rel=0.05)
    assert inside == pytest.approx(12.0, rel=0.05)


def test_cumulative_rate_and_its_inverse():
    profile = RateProfile(2.0, burst_start_s=10.0, burst_end_s=20.0, burst_factor=3.0)
    assert profile.cumulative(10.0) == 20.0
    assert profile.cumulative(20.0) == 80.0
    assert profile.cumulative(25.0) == 90.0
    for t in (0.0, 3.5, 10.0, 12.25, 20.0, 31.0):
        assert profile.inverse(profile.cumulative(t)) == pytest.approx(t)
    assert [profile.rate_at(t) for t in (9.9, 10.0, 19.9, 20.0)] == [2.0, 6.0, 6.0, 2.0]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: RateProfile(0.0), "rate must be a positive number"),
        (lambda: RateProfile(float("nan")), "rate must be a positive number"),
        (lambda: RateProfile(1.0, 5.0, 2.0, 3.0), "burst window"),
        (lambda: arrival_times(RateProfile(1.0), 0.0, np.random.default_rng(0), max_count=3), "burstiness must be"),
        (lambda: arrival_times(RateProfile(1.0), 1.0, np.random.default_rng(0)), "give a number of requests or a duration"),
    ],
)
def test_bad_arguments_are_clear_errors(call, message):
    with pytest.raises(InvalidRequestError, match=message):
        call()

"""The in-process drift detector on a real prometheus_client histogram, minute by simulated minute."""

from __future__ import annotations

import logging
import math

import pytest
from prometheus_client import CollectorRegistry, Histogram

from mcp.ops.drift import DriftDetector, buckets_by_model, histogram_quantile
from mcp.serving.metrics import E2E_BUCKETS, LABELS


def test_histogram_quantile_follows_prometheus() -> None:
    # 60 requests at <= 0.25 s: rank 57 of 60 inside (0, 0.25] -> 0.2375, promtool's value too
    assert histogram_quantile(0.95, [(0.25, 60), (1.0, 60), (math.inf, 60)]) == pytest.approx(0.2375)
    assert histogram_quantile(0.95, [(0.25, 0), (1.0, 60), (math.inf, 60)]) == pytest.approx(0.9625)
    assert histogram_quantile(0.99, [(0.25, 10), (1.0, 10), (math.inf, 20)]) == 1.0  # rank in +Inf
    assert math.isnan(histogram_quantile(0.95, [(0.25, 0), (math.inf, 0)]))


def test_drift_fires_after_three_minutes_and_resolves(caplog: pytest.LogCaptureFixture) -> None:
    e2e = Histogram("e2e_seconds", "test", LABELS, buckets=E2E_BUCKETS, registry=CollectorRegistry())
    detector = DriftDetector("e2e", lambda: buckets_by_model(e2e))
    caplog.set_level(logging.INFO, logger="mcp.ops.drift")

    def run(minutes: int, start: int, latency_a: float) -> dict[int, dict[str, bool]]:
        """60 requests a minute per model; "b" always 0.2 s. Ticks every 30 s, as the server does."""
        seen = {}
        for minute in range(start, start + minutes):
            for half in (0, 1):
                for _ in range(30):
                    e2e.labels("a", "1", "medium").observe(latency_a)
                    e2e.labels("b", "1", "high").observe(0.2)
                states = detector.tick(minute * 60.0 + half * 30.0)
            seen[minute] = {s.model: s.drifting for s in states}
        return seen

    before = run(60, 0, 0.2)
    assert not any(any(models.values()) for models in before.values())
    assert not caplog.records
    state_a = {s.model: s for s in detector.states()}["a"]
    # 0.2 s lies in the (0.1, 0.25] bucket: 0.1 + 0.15 x 0.95
    assert state_a.value_s == pytest.approx(0.2425) and state_a.baseline_s == pytest.approx(0.2425)

    slow = run(10, 60, 2.0)  # every request of "a" now takes 2 s
    assert not slow[60]["a"] and not slow[61]["a"]  # above the baseline, but not yet for 3 minutes
    assert slow[65]["a"] and slow[69]["a"]
    assert not any(models["b"] for models in slow.values())
    drift_lines = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(drift_lines) == 1  # one event at the change, not one per tick
    assert drift_lines[0].getMessage().startswith("latency drift: a e2e p95 2.")

    fast_again = run(10, 70, 0.2)
    assert not fast_again[79]["a"]
    assert any(r.getMessage().startswith("latency drift resolved: a e2e") for r in caplog.records)


def test_slow_growth_within_twice_the_baseline_does_not_fire() -> None:
    e2e = Histogram("e2e_seconds", "test", LABELS, buckets=E2E_BUCKETS, registry=CollectorRegistry())
    detector = DriftDetector("e2e", lambda: buckets_by_model(e2e))
    for tick in range(240):  # two hours at 30 s ticks, latency growing 20% over the span: no drift
        for _ in range(30):
            e2e.labels("a", "1", "medium").observe(0.4 + 0.08 * tick / 240)
        assert not detector.tick(tick * 30.0)[0].drifting

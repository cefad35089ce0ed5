"""The sliding-window probe: percentiles, error rate, OOMs and throughput, filtered and windowed."""

from __future__ import annotations

import pytest

from mcp.base.errors import InvalidRequestError
from mcp.serving.probe import ProbeWindow, Sample, parse_window


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def window():
    clock = Clock()
    probe = ProbeWindow(clock)
    for i in range(1, 101):  # requests of 0.01 .. 1.00 s, one in ten failed, ending over the last 100 s
        probe.add(Sample(900.0 + i, "m", "1", i / 100, i / 1000, ok=i % 10 != 0, oom=i == 50,
                         num_output_tokens=10))
    probe.add(Sample(999.0, "m", "2", 5.0, 0.5, ok=True, oom=False, num_output_tokens=30))
    probe.add(Sample(100.0, "m", "1", 99.0, 9.0, ok=False, oom=True, num_output_tokens=1))  # too old
    return probe, clock


def test_percentiles_over_the_window(window):
    probe, _ = window
    assert probe.evaluate("latency_p50", "5m", version="1").value == 0.50
    assert probe.evaluate("latency_p95", "5m", version="1").value == 0.95
    assert probe.evaluate("latency_p99", "5m", model="m").value == 1.00
    result = probe.evaluate("ttft_p95", "5m", version="1", threshold=0.05)
    assert result.value == 0.095 and result.healthy is False and result.samples == 100


def test_rates_counts_and_the_window_edge(window):
    probe, clock = window
    assert probe.evaluate("error_rate", "5m", version="1").value == pytest.approx(0.10)
    assert probe.evaluate("oom_count", "5m").value == 1 and not probe.evaluate("oom_count", "5m").healthy
    assert probe.evaluate("throughput", "100s", version="2").value == pytest.approx(0.3)
    assert probe.evaluate("latency_p99", "10s", version="1").samples == 10
    clock.now = 5000.0
    empty = probe.evaluate("latency_p95", "5m")
    assert (empty.value, empty.samples, empty.healthy) == (0.0, 0, True)


def test_bad_metric_and_window():
    assert parse_window("30s") == 30 and parse_window("5m") == 300 and parse_window("250ms") == 0.25
    for bad in ("2h", "0s", "soon", "-1m"):
        with pytest.raises(InvalidRequestError, match="window"):
            parse_window(bad)
    with pytest.raises(InvalidRequestError, match="unknown metric"):
        ProbeWindow().evaluate("latency_p42")

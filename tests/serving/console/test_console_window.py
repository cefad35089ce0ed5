"""The live overview's numbers: differences of a real Prometheus registry over a sliding window,
with quantiles read from histogram buckets as Prometheus reads them."""

from __future__ import annotations

import math

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram

from mcp.serving.console.quantile import quantile
from mcp.serving.console.window import MetricsWindow
from mcp.serving.metrics import LABELS, LATENCY_BUCKETS, TOKEN_GAP_BUCKETS

INF = math.inf


def test_quantile_interpolates_within_the_bucket_holding_the_rank():
    buckets = ((0.1, 0.0), (0.5, 10.0), (1.0, 10.0), (INF, 10.0))
    assert quantile(buckets, 0.5) == pytest.approx(0.3)  # rank 5 of 10, all in (0.1, 0.5]
    assert quantile(buckets, 1.0) == pytest.approx(0.5)


def test_quantile_in_the_inf_bucket_is_the_largest_finite_bound_and_none_without_observations():
    assert quantile(((0.1, 5.0), (0.5, 10.0), (INF, 20.0)), 0.95) == 0.5
    assert quantile(((0.1, 0.0), (INF, 0.0)), 0.5) is None
    assert quantile((), 0.5) is None


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _served_metrics(registry: CollectorRegistry) -> dict:
    """The metrics ServingMetrics defines (same names, labels and buckets), on a registry of the test's own."""
    return {
        "tokens": Counter("mcp_generation_tokens", "", LABELS, registry=registry),
        "finished": Counter("mcp_request_success", "", (*LABELS, "finished_reason"), registry=registry),
        "preempted": Counter("mcp_num_preemptions", "", LABELS, registry=registry),
        "ttft": Histogram("mcp_time_to_first_token_seconds", "", LABELS, buckets=LATENCY_BUCKETS, registry=registry),
        "itl": Histogram("mcp_inter_token_latency_seconds", "", LABELS, buckets=TOKEN_GAP_BUCKETS, registry=registry),
        "good": Counter("mcp_slo_good_requests", "", LABELS, registry=registry),
        "scored": Counter("mcp_slo_requests", "", LABELS, registry=registry),
        "refused": Counter("mcp_requests_refused", "", ("code", "transport"), registry=registry),
    }


def _finish(m: dict, labels: tuple[str, str, str], ttft_s: float, tokens: int, good: bool) -> None:
    m["tokens"].labels(*labels).inc(tokens)
    m["finished"].labels(*labels, "stop").inc()
    m["ttft"].labels(*labels).observe(ttft_s)
    for _ in range(tokens - 1):
        m["itl"].labels(*labels).observe(0.04)
    m["scored"].labels(*labels).inc()
    m["good"].labels(*labels).inc(good)


def test_a_frame_counts_only_what_happened_inside_the_window():
    registry, clock = CollectorRegistry(), _Clock()
    m = _served_metrics(registry)
    labels = ("smollm2", "1", "high")
    _finish(m, labels, ttft_s=9.0, tokens=50, good=False)  # before the window opens: never counted
    window = MetricsWindow(registry, window_s=10.0, clock=clock)
    window.frame()
    clock.now += 5
    for ttft_s in (0.02, 0.03, 0.04, 0.2):
        _finish(m, labels, ttft_s, tokens=11, good=ttft_s < 0.1)
    m["refused"].labels("rate_limit_exceeded", "http").inc(2)
    m["refused"].labels("over_capacity", "grpc").inc()
    frame = window.frame()
    (row,) = frame.classes
    assert (row.model, row.version, row.slo_class) == labels
    assert row.num_requests == 4 and row.tokens_per_s == pytest.approx(44 / 5)
    assert row.slo_attainment == pytest.approx(0.75)
    assert 0.025 <= row.ttft_p50_s <= 0.05 and 0.1 <= row.ttft_p95_s <= 0.25
    assert 0.03 <= row.tpot_p50_s <= 0.05
    assert frame.refused == {"http": {"rate_limit_exceeded": 2}, "grpc": {"over_capacity": 1}}
    assert frame.window_s == pytest.approx(5)


def test_the_window_slides_past_old_traffic():
    registry, clock = CollectorRegistry(), _Clock()
    m = _served_metrics(registry)
    window = MetricsWindow(registry, window_s=10.0, clock=clock)
    window.frame()
    _finish(m, ("smollm2", "1", "low"), ttft_s=0.02, tokens=5, good=True)
    clock.now += 1
    assert window.frame().classes[0].num_requests == 1
    for _ in range(12):  # a quiet 12 s: the burst leaves the window
        clock.now += 1
        frame = window.frame()
    (row,) = frame.classes
    assert row.num_requests == 0 and row.tokens_per_s == 0 and row.ttft_p95_s is None and row.slo_attainment is None

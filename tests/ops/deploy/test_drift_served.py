"""The drift detector inside a running ``mcp2026 serve``: its gauges on /metrics after real requests."""

from __future__ import annotations

import math
import time

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from mcp.ops.drift import DriftRule


def drift_samples(url: str) -> dict[tuple[str, str, str], float]:
    """(metric, model, latency) -> value of the mcp_latency_drift* gauges."""
    text = httpx.get(url + "/metrics", timeout=10.0).text
    return {(s.name, s.labels["model"], s.labels["latency"]): s.value
            for family in text_string_to_metric_families(text) if family.name.startswith("mcp_latency_drift")
            for s in family.samples}


@pytest.mark.slow
def test_a_served_model_gets_drift_gauges(served_tiny) -> None:
    deadline = time.monotonic() + 3 * DriftRule().interval_s + 10
    samples: dict = {}
    while time.monotonic() < deadline:
        answer = httpx.post(served_tiny.url + "/v1/completions", json={"model": "tiny", "prompt": "Hi",
                                                                       "max_tokens": 3}, timeout=60.0)
        assert answer.status_code == 200, answer.text
        samples = drift_samples(served_tiny.url)
        if not math.isnan(samples.get(("mcp_latency_drift_p95_seconds", "tiny", "e2e"), math.nan)):
            break
        time.sleep(1.0)
    assert samples[("mcp_latency_drift", "tiny", "e2e")] == 0.0  # drifting takes 3 minutes above 2x
    assert samples[("mcp_latency_drift", "tiny", "ttft")] == 0.0
    p95 = samples[("mcp_latency_drift_p95_seconds", "tiny", "e2e")]
    baseline = samples[("mcp_latency_drift_baseline_seconds", "tiny", "e2e")]
    assert 0 < p95 < 10 and 0 < baseline < 10, samples  # a p95 interpolated inside a finite bucket
    assert "latency drift" not in served_tiny.log()

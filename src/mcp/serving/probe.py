"""The analysis probe: latency percentiles, error rate, OOMs and throughput over a sliding window.

``/health?metric=latency_p95&service=NAME[&model=&version=&window=5m]`` answers
``{"value": ..., "healthy": ...}`` for Argo Rollouts' web provider. The window keeps every
finished request of the last hour (at most ``MAX_SAMPLES``), so a percentile is exact over
the requests in the window, not interpolated from histogram buckets.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections import deque
from dataclasses import dataclass

from mcp.serving.errors import FieldError

MAX_AGE_S = 3600.0
MAX_SAMPLES = 100_000
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)?$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}
# metric -> (default threshold, True when a higher value is healthier)
METRICS: dict[str, tuple[float, bool]] = {
    "latency_p50": (30.0, False), "latency_p95": (60.0, False), "latency_p99": (120.0, False),
    "ttft_p50": (5.0, False), "ttft_p95": (10.0, False), "ttft_p99": (20.0, False),
    "error_rate": (0.05, False), "oom_count": (0.0, False),
    "throughput": (0.0, True),  # generated tokens per second
    "request_rate": (0.0, True),  # finished requests per second
}


@dataclass(frozen=True)
class Sample:
    time_s: float  # monotonic, when the request ended
    model: str
    version: str
    e2e_s: float
    ttft_s: float | None
    ok: bool  # not ended by an error or the server's deadline (a client's cancel is ok)
    oom: bool
    num_output_tokens: int


@dataclass(frozen=True)
class ProbeResult:
    metric: str
    value: float
    healthy: bool
    window_s: float
    samples: int


class ProbeWindow:
    """Finished requests of the last hour; thread-safe (engine loop threads add, HTTP reads)."""

    def __init__(self, clock=time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._samples: deque[Sample] = deque(maxlen=MAX_SAMPLES)

    def add(self, sample: Sample) -> None:
        with self._lock:
            self._samples.append(sample)

    def evaluate(self, metric: str, window: str = "5m", model: str | None = None, version: str | None = None,
                 threshold: float | None = None) -> ProbeResult:
        if metric not in METRICS:
            raise FieldError(f"unknown metric {metric!r}; use one of {', '.join(METRICS)}", "metric")
        window_s = parse_window(window)
        now = self._clock()
        with self._lock:
            chosen = [s for s in self._samples if s.time_s > now - window_s
                      and (model is None or s.model == model) and (version is None or s.version == version)]
        value = _value(metric, chosen, window_s)
        default, higher_is_better = METRICS[metric]
        limit = default if threshold is None else threshold
        healthy = value >= limit if higher_is_better else value <= limit
        return ProbeResult(metric, value, healthy, window_s, len(chosen))


def parse_window(text: str) -> float:
    """``30s``, ``5m``, ``1h``, ``500ms`` or plain seconds; at most an hour."""
    match = _DURATION.match(text.strip())
    seconds = float(match.group(1)) * _UNITS[match.group(2)] if match else math.nan
    if not 0 < seconds <= MAX_AGE_S:
        raise FieldError(f"window {text!r} must be a duration like 30s, 5m or 1h, at most 1h", "window")
    return seconds


def _value(metric: str, samples: list[Sample], window_s: float) -> float:
    if metric.startswith(("latency_", "ttft_")):
        values = [s.e2e_s if metric.startswith("latency") else s.ttft_s for s in samples]
        return _percentile([v for v in values if v is not None], float(metric.rsplit("p", 1)[1]) / 100)
    if metric == "error_rate":
        return sum(not s.ok for s in samples) / len(samples) if samples else 0.0
    if metric == "oom_count":
        return float(sum(s.oom for s in samples))
    if metric == "throughput":
        return sum(s.num_output_tokens for s in samples) / window_s
    return len(samples) / window_s  # request_rate


def _percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (0 with no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]

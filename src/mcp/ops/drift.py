"""Baseline drift inside the server, for users without Prometheus.

The same rule as ``MCPLatencyDrift`` in deploy/prometheus/alerting-rules.yaml: every tick the
detector records each model's p95 over the last 5 minutes, computed from a latency
histogram's bucket counts exactly as Prometheus' ``histogram_quantile`` does; the model drifts
when that p95 exceeds ``factor`` x the median of its recorded p95s of the last 7 days, and
keeps exceeding it for 3 minutes. The state goes out as a gauge and as one log line at each
change, so a drift is visible with nothing but ``/metrics`` and the server's log.
"""

from __future__ import annotations

import bisect
import logging
import math
import statistics
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from prometheus_client import Histogram

logger = logging.getLogger("mcp.ops.drift")

Buckets = list[tuple[float, float]]  # (upper bound, cumulative count), sorted, +Inf last


@dataclass(frozen=True)
class DriftRule:
    """The alert's numbers: p95 over ``window_s`` > ``factor`` x median of ``baseline_s`` for ``for_s``."""

    quantile: float = 0.95
    window_s: float = 300.0
    baseline_s: float = 7 * 24 * 3600.0
    factor: float = 2.0
    for_s: float = 180.0
    interval_s: float = 30.0  # the recording rules' evaluation interval


@dataclass(frozen=True)
class DriftState:
    model: str
    value_s: float  # p95 over the window (nan without requests)
    baseline_s: float  # median of the recorded p95s (nan before the first one)
    drifting: bool


def histogram_quantile(q: float, buckets: Buckets) -> float:
    """Prometheus' ``histogram_quantile``: linear interpolation inside the bucket holding rank q."""
    if len(buckets) < 2 or buckets[-1][1] == 0:
        return math.nan
    rank = q * buckets[-1][1]
    counts = [count for _, count in buckets[:-1]]
    b = bisect.bisect_left(counts, rank)
    if b == len(buckets) - 1:
        return buckets[-2][0]  # the rank lies in +Inf: the highest finite bound
    if b == 0 and buckets[0][0] <= 0:
        return buckets[0][0]
    start, end, count = 0.0, buckets[b][0], buckets[b][1]
    if b > 0:
        start, count, rank = buckets[b - 1][0], count - buckets[b - 1][1], rank - buckets[b - 1][1]
    return start + (end - start) * (rank / count)


def buckets_by_model(histogram: Histogram) -> dict[str, Buckets]:
    """A labelled histogram's cumulative bucket counts, summed over every label but ``model``."""
    sums: dict[str, dict[float, float]] = {}
    for family in histogram.collect():
        for sample in family.samples:
            if sample.name.endswith("_bucket"):
                bounds = sums.setdefault(sample.labels["model"], {})
                le = float(sample.labels["le"])
                bounds[le] = bounds.get(le, 0.0) + sample.value
    return {model: sorted(bounds.items()) for model, bounds in sums.items()}


@dataclass
class _ModelTrack:
    snapshots: deque[tuple[float, Buckets]] = field(default_factory=deque)  # the window's bucket counts
    history: deque[tuple[float, float]] = field(default_factory=deque)  # recorded p95s of the baseline span
    above_since: float | None = None
    drifting: bool = False


class DriftDetector:
    """Per-model drift of one latency histogram; ``tick`` is called every ``rule.interval_s``."""

    def __init__(self, name: str, read: Callable[[], dict[str, Buckets]], rule: DriftRule = DriftRule()) -> None:
        self.name, self._read, self.rule = name, read, rule
        self._lock = threading.Lock()
        self._tracks: dict[str, _ModelTrack] = {}
        self._states: dict[str, DriftState] = {}

    def tick(self, now: float) -> list[DriftState]:
        """Record each model's p95 and update its drift state; returns the states."""
        current = self._read()
        with self._lock:
            for model, buckets in current.items():
                track = self._tracks.setdefault(model, _ModelTrack())
                self._states[model] = self._step(model, track, buckets, now)
            return list(self._states.values())

    def states(self) -> list[DriftState]:
        with self._lock:
            return list(self._states.values())

    def _step(self, model: str, track: _ModelTrack, buckets: Buckets, now: float) -> DriftState:
        rule = self.rule
        track.snapshots.append((now, buckets))
        while track.snapshots[0][0] < now - rule.window_s:
            track.snapshots.popleft()
        value = histogram_quantile(rule.quantile, _increase(track.snapshots[0][1], buckets))
        if not math.isnan(value):
            track.history.append((now, value))
        while track.history and track.history[0][0] < now - rule.baseline_s:
            track.history.popleft()
        baseline = statistics.median(v for _, v in track.history) if track.history else math.nan
        above = value > rule.factor * baseline  # False with nan on either side, as in PromQL
        if not above:
            track.above_since = None
        elif track.above_since is None:
            track.above_since = now
        drifting = above and now - track.above_since >= rule.for_s
        if drifting != track.drifting:
            self._log_change(model, drifting, value, baseline)
            track.drifting = drifting
        return DriftState(model, value, baseline, drifting)

    def _log_change(self, model: str, drifting: bool, value: float, baseline: float) -> None:
        rule = self.rule
        if drifting:
            logger.warning("latency drift: %s %s p%g %.3f s > %g x baseline %.3f s for %g s", model, self.name,
                           rule.quantile * 100, value, rule.factor, baseline, rule.for_s)
        else:
            logger.info("latency drift resolved: %s %s p%g %.3f s, baseline %.3f s", model, self.name,
                        rule.quantile * 100, value, baseline)


def _increase(old: Buckets, new: Buckets) -> Buckets:
    """Bucket counts added between two snapshots (a bound missing from ``old`` counted from 0)."""
    before = dict(old)
    return [(le, count - before.get(le, 0.0)) for le, count in new]


class DriftMonitor:
    """Ticks detectors on a daemon thread (the server keeps running one for its lifetime)."""

    def __init__(self, detectors: Iterable[DriftDetector], interval_s: float, clock=time.monotonic) -> None:
        self.detectors, self._interval_s, self._clock = list(detectors), interval_s, clock
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mcp-drift", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()

    def _run(self) -> None:
        while not self._stopped.wait(self._interval_s):
            now = self._clock()
            for detector in self.detectors:
                try:
                    detector.tick(now)
                except Exception:  # noqa: BLE001 - a drift check must never stop the server
                    logger.exception("drift check of %s failed", detector.name)

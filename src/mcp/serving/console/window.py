"""``MetricsWindow``: the live overview, read from the server's own Prometheus registry.

The console does not count anything itself: each ``frame()`` snapshots the registry that
``/metrics`` renders (serving/metrics.py), keeps the snapshots of the last ``window_s`` seconds
and differences the newest against the oldest, as Prometheus' ``rate()`` and
``histogram_quantile()`` would. So the console and a Grafana board show the same numbers.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import asdict, dataclass
from typing import Any

from prometheus_client import CollectorRegistry

from mcp.serving.console.quantile import Buckets, quantile

Labels = tuple[tuple[str, str], ...]
Snapshot = dict[tuple[str, Labels], float]
WINDOW_S = 60.0


@dataclass(frozen=True)
class ClassRow:
    """One model version and SLO class over the window."""

    model: str
    version: str
    slo_class: str
    ttft_p50_s: float | None
    ttft_p95_s: float | None
    tpot_p50_s: float | None  # the gap between two tokens of a request
    tpot_p95_s: float | None
    tokens_per_s: float
    num_requests: int
    num_preemptions: int
    slo_attainment: float | None  # good / scored requests in the window; None: none scored


@dataclass(frozen=True)
class VersionRow:
    """One loaded model version now."""

    model: str
    version: str
    num_running: int
    num_waiting: int
    kv_cache_usage: float  # 0-1


@dataclass(frozen=True)
class Frame:
    at_s: float  # wall clock
    window_s: float  # the span the differences cover (shorter right after the first frame)
    classes: tuple[ClassRow, ...]
    versions: tuple[VersionRow, ...]
    refused: dict[str, dict[str, int]]  # refusals in the window: transport (http, grpc) -> error code -> count

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class MetricsWindow:
    """Snapshots of one registry over a sliding window. Thread-safe: each console stream calls
    ``frame()`` about once a second."""

    def __init__(self, registry: CollectorRegistry, window_s: float = WINDOW_S, clock=time.monotonic) -> None:
        self._registry, self._window_s, self._clock = registry, window_s, clock
        self._lock = threading.Lock()
        self._snapshots: deque[tuple[float, Snapshot]] = deque()

    def frame(self) -> Frame:
        now, snapshot = self._clock(), take_snapshot(self._registry)
        with self._lock:
            self._snapshots.append((now, snapshot))
            while len(self._snapshots) > 2 and self._snapshots[1][0] <= now - self._window_s:
                self._snapshots.popleft()
            started, oldest = self._snapshots[0]
        return build_frame(oldest, snapshot, max(now - started, 1e-9))


def take_snapshot(registry: CollectorRegistry) -> Snapshot:
    """Every sample of the registry by name and labels."""
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in registry.collect() for sample in family.samples}


def build_frame(old: Snapshot, new: Snapshot, span_s: float) -> Frame:
    delta = _Delta(old, new)
    keys = sorted({_key(labels) for name, labels in new if name == "mcp_request_success_total"})
    classes = tuple(_class_row(delta, key, span_s) for key in keys)
    versions = tuple(VersionRow(dict(labels)["model"], dict(labels)["version"], int(value),
                                int(new.get(("mcp_num_requests_waiting", labels), 0)),
                                new.get(("mcp_kv_cache_usage_perc", labels), 0.0))
                     for (name, labels), value in sorted(new.items()) if name == "mcp_num_requests_running")
    return Frame(time.time(), span_s, classes, versions, _refused(delta))


def _refused(delta: _Delta) -> dict[str, dict[str, int]]:
    """The window's refusals (HTTP 429, gRPC RESOURCE_EXHAUSTED) by transport and error code."""
    refused: dict[str, dict[str, int]] = {}
    for name, labels in delta.new:
        if name == "mcp_requests_refused_total":
            found = dict(labels)
            refused.setdefault(found["transport"], {})[found["code"]] = int(delta.of(name, labels))
    return refused


def _key(labels: Labels) -> tuple[str, str, str]:
    found = dict(labels)
    return found["model"], found["version"], found["slo_class"]


def _class_row(delta: _Delta, key: tuple[str, str, str], span_s: float) -> ClassRow:
    labels = tuple(sorted({"model": key[0], "version": key[1], "slo_class": key[2]}.items()))
    ttft = delta.buckets("mcp_time_to_first_token_seconds", labels)
    tpot = delta.buckets("mcp_inter_token_latency_seconds", labels)
    scored = delta.of("mcp_slo_requests_total", labels)
    return ClassRow(*key, quantile(ttft, 0.5), quantile(ttft, 0.95), quantile(tpot, 0.5), quantile(tpot, 0.95),
                    delta.of("mcp_generation_tokens_total", labels) / span_s,
                    int(delta.summed("mcp_request_success_total", labels)),
                    int(delta.of("mcp_num_preemptions_total", labels)),
                    delta.of("mcp_slo_good_requests_total", labels) / scored if scored else None)


class _Delta:
    """Counter differences between two snapshots (a series new since the old one counts from 0)."""

    def __init__(self, old: Snapshot, new: Snapshot) -> None:
        self.old, self.new = old, new

    def of(self, name: str, labels: Labels) -> float:
        key = (name, labels)
        return max(0.0, self.new.get(key, 0.0) - self.old.get(key, 0.0))

    def summed(self, name: str, labels: Labels) -> float:
        """Over the series whose labels extend ``labels`` (the finish counter's reasons)."""
        wanted = set(labels)
        return sum(self.of(name, found) for series, found in self.new
                   if series == name and wanted <= set(found))

    def buckets(self, histogram: str, labels: Labels) -> Buckets:
        name = f"{histogram}_bucket"
        wanted = set(labels)
        counts = [(float(dict(found)["le"]), self.of(name, found)) for series, found in self.new
                  if series == name and wanted <= set(found) and len(found) == len(labels) + 1]
        return tuple(sorted(counts))

"""Analysis of a canary step: the canary arm's latency, errors and OOMs against the gates, with
the stable arm's figures beside them for comparison.

The figures come from what the gateway itself observed of each route arm (``ArmWindow``: every
finished request's end-to-end latency and outcome), optionally plus the OOM count the canary's
instances report on their ``/health?metric=oom_count`` probe.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass

from mcp.gateway.canary.records import Gates

MAX_SAMPLES_PER_ARM = 50_000


@dataclass(frozen=True)
class Sample:
    at: float  # wall clock (time.time()), comparable with the step's start in the database
    latency_s: float
    ok: bool  # not a 5xx, not an upstream failure, not a broken stream
    oom: bool


@dataclass(frozen=True)
class ArmStats:
    requests: int
    errors: int
    ooms: int
    p95_ms: float
    error_rate: float


@dataclass(frozen=True)
class Analysis:
    passed: bool
    canary: ArmStats
    stable: ArmStats
    failures: tuple[str, ...]  # which gate failed and by how much; empty when passed

    def detail(self) -> dict:
        return {"canary": asdict(self.canary), "stable": asdict(self.stable), "failures": list(self.failures)}


class ArmWindow:
    """Finished requests per (route, arm); thread-safe, bounded."""

    def __init__(self, clock=time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._samples: dict[tuple[str, str], deque[Sample]] = {}

    def record(self, route: str, arm: str, latency_s: float, ok: bool, oom: bool = False) -> None:
        sample = Sample(self._clock(), latency_s, ok, oom)
        with self._lock:
            self._samples.setdefault((route, arm), deque(maxlen=MAX_SAMPLES_PER_ARM)).append(sample)

    def since(self, route: str, arm: str, start: float) -> list[Sample]:
        with self._lock:
            return [s for s in self._samples.get((route, arm), ()) if s.at >= start]


def stats(samples: list[Sample], extra_ooms: int = 0) -> ArmStats:
    errors = sum(not s.ok for s in samples)
    latencies = sorted(s.latency_s for s in samples)
    p95 = latencies[max(0, math.ceil(0.95 * len(latencies)) - 1)] * 1000 if latencies else 0.0
    return ArmStats(len(samples), errors, sum(s.oom for s in samples) + extra_ooms, round(p95, 3),
                    errors / len(samples) if samples else 0.0)


def analyze(canary: ArmStats, stable: ArmStats, gates: Gates) -> Analysis:
    """Pass when the canary's p95 <= max_p95_ms, error rate < max_error_rate (0 errors pass a
    gate of 0) and OOMs <= max_oom."""
    failures = []
    if canary.p95_ms > gates.max_p95_ms:
        failures.append(f"p95 latency {canary.p95_ms:.0f} ms > {gates.max_p95_ms:g} ms "
                        f"(stable {stable.p95_ms:.0f} ms)")
    if canary.errors and canary.error_rate >= gates.max_error_rate:
        failures.append(f"error rate {canary.error_rate:.2%} ({canary.errors}/{canary.requests}) >= "
                        f"{gates.max_error_rate:.2%} (stable {stable.error_rate:.2%})")
    if canary.ooms > gates.max_oom:
        failures.append(f"{canary.ooms} OOM(s) > {gates.max_oom}")
    return Analysis(not failures, canary, stable, tuple(failures))

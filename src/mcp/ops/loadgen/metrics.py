"""Per-request latency metrics, as vLLM's ``bench serve`` defines them (REFERENCE.md).

- TTFT: request sent -> first token (its first non-empty delta).
- E2E: request sent -> the end of its stream.
- TPOT: (E2E − TTFT) / (output tokens − 1); none for a one-token answer.
- ITL: every gap between two consecutive deltas.

A request is *good* when it finished (status ok), its TTFT is within its class's target,
and its TPOT too (a one-token answer has no TPOT and meets it). Refused, failed and
timed-out requests are never good and have no latencies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mcp.engine.scheduler.slo import SLOTarget
from mcp.ops.loadgen.record import OK, RequestRecord

PERCENTILES = (50, 95, 99)


@dataclass(frozen=True)
class RequestMetrics:
    ttft_s: float | None
    tpot_s: float | None
    e2e_s: float | None
    itls_s: tuple[float, ...]
    good: bool


def request_metrics(record: RequestRecord, target: SLOTarget) -> RequestMetrics:
    if record.status != OK:
        return RequestMetrics(None, None, None, (), False)
    chunks = record.chunk_times_s
    e2e = record.end_s - record.sent_s
    ttft = chunks[0] - record.sent_s if chunks else e2e
    tpot = (e2e - ttft) / (record.output_tokens - 1) if record.output_tokens > 1 else None
    itls = tuple(b - a for a, b in zip(chunks, chunks[1:]))
    good = ttft <= target.ttft_s and (tpot is None or tpot <= target.tpot_s)
    return RequestMetrics(ttft, tpot, e2e, itls, good)


@dataclass(frozen=True)
class LatencyStats:
    """Seconds over the requests (or gaps) that have the metric; numpy's linear percentiles."""

    count: int
    mean: float
    p50: float
    p95: float
    p99: float

    def to_dict(self) -> dict:
        return {"count": self.count, "mean": self.mean, "p50": self.p50, "p95": self.p95, "p99": self.p99}


def latency_stats(values: Sequence[float | None]) -> LatencyStats | None:
    present = np.array([v for v in values if v is not None], dtype=np.float64)
    if present.size == 0:
        return None
    p50, p95, p99 = (float(v) for v in np.percentile(present, PERCENTILES))
    return LatencyStats(int(present.size), float(present.mean()), p50, p95, p99)

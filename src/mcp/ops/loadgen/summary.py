"""The SLO report of one run: per class and overall counts, latencies, attainment, rates.

- attainment: good requests / all requests of the group (refused and failed ones count as not good);
- goodput: good requests per second of the run (vLLM's ``request_goodput``);
- throughput: finished requests per second and their output tokens per second;
- the same per tenant, to see whether one tenant's flood starves another;
- over a sweep of rates, ``max_rate_meeting`` gives DistServe's goodput: the highest offered
  rate at which attainment stays at or above 90%.

The run's duration is from its start to the last request's end, as vLLM measures it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mcp.ops.loadgen.metrics import LatencyStats, RequestMetrics, latency_stats, request_metrics
from mcp.ops.loadgen.mix import SLOTable
from mcp.ops.loadgen.record import ERROR, OK, REFUSED, TIMEOUT, RequestRecord

ALL = "all"
ATTAINMENT_GOAL = 0.9


@dataclass(frozen=True)
class GroupSummary:
    name: str  # an SLO class, or "all"
    num_requests: int
    num_ok: int
    num_refused: int
    num_errors: int
    num_timeouts: int
    num_good: int
    attainment: float | None  # None for a class with no requests
    goodput_rps: float
    throughput_rps: float
    output_tokens_per_s: float
    ttft: LatencyStats | None
    tpot: LatencyStats | None
    itl: LatencyStats | None
    e2e: LatencyStats | None

    def to_dict(self) -> dict:
        data = {key: getattr(self, key) for key in self.__dataclass_fields__}
        for key in ("ttft", "tpot", "itl", "e2e"):
            data[key] = data[key].to_dict() if data[key] is not None else None
        return data


@dataclass(frozen=True)
class RunSummary:
    offered_rate: float  # the workload's base rate, requests/s
    duration_s: float
    overall: GroupSummary
    by_class: tuple[GroupSummary, ...]  # in the SLO table's order, classes without requests left out
    by_tenant: tuple[GroupSummary, ...] = ()  # in order of first arrival: is one tenant starved?

    def group(self, name: str) -> GroupSummary | None:
        return self.overall if name == ALL else next((g for g in self.by_class if g.name == name), None)

    def to_dict(self) -> dict:
        return {"offered_rate": self.offered_rate, "duration_s": self.duration_s,
                "overall": self.overall.to_dict(), "by_class": [g.to_dict() for g in self.by_class],
                "by_tenant": [g.to_dict() for g in self.by_tenant]}


def summarize(records: Sequence[RequestRecord], slos: SLOTable, duration_s: float, offered_rate: float) -> RunSummary:
    metrics = [request_metrics(record, slos.target(record.slo_class)) for record in records]
    pairs = list(zip(records, metrics))
    by_class = tuple(
        summarize_group(name, [p for p in pairs if p[0].slo_class == name], duration_s)
        for name in slos.names if any(r.slo_class == name for r in records)
    )
    by_tenant = tuple(
        summarize_group(tenant, [p for p in pairs if p[0].tenant == tenant], duration_s)
        for tenant in dict.fromkeys(r.tenant for r in records)
    )
    return RunSummary(offered_rate, duration_s, summarize_group(ALL, pairs, duration_s), by_class, by_tenant)


def summarize_group(name: str, pairs: Sequence[tuple[RequestRecord, RequestMetrics]],
                    duration_s: float) -> GroupSummary:
    records = [r for r, _ in pairs]
    metrics = [m for _, m in pairs]
    count = lambda status: sum(r.status == status for r in records)  # noqa: E731
    num_good = sum(m.good for m in metrics)
    per_s = (lambda n: n / duration_s) if duration_s > 0 else (lambda n: 0.0)
    return GroupSummary(
        name=name, num_requests=len(records), num_ok=count(OK), num_refused=count(REFUSED),
        num_errors=count(ERROR), num_timeouts=count(TIMEOUT), num_good=num_good,
        attainment=num_good / len(records) if records else None,
        goodput_rps=per_s(num_good), throughput_rps=per_s(count(OK)),
        output_tokens_per_s=per_s(sum(r.output_tokens for r in records if r.status == OK)),
        ttft=latency_stats([m.ttft_s for m in metrics]), tpot=latency_stats([m.tpot_s for m in metrics]),
        itl=latency_stats([gap for m in metrics for gap in m.itls_s]), e2e=latency_stats([m.e2e_s for m in metrics]),
    )


def max_rate_meeting(summaries: Sequence[RunSummary], name: str = ALL, goal: float = ATTAINMENT_GOAL) -> float | None:
    """DistServe's goodput over a sweep: the highest offered rate up to which every run's attainment is >= goal."""
    best = None
    for summary in sorted(summaries, key=lambda s: s.offered_rate):
        group = summary.group(name)
        if group is None or group.attainment is None:
            continue
        if group.attainment < goal:
            break
        best = summary.offered_rate
    return best

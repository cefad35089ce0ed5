"""A bench: the same seeded workload at one rate or at each rate of a sweep, summarized."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mcp.ops.loadgen.mix import SLOTable
from mcp.ops.loadgen.report import BenchRun
from mcp.ops.loadgen.runner import run_workload
from mcp.ops.loadgen.summary import summarize
from mcp.ops.loadgen.target import Target
from mcp.ops.loadgen.workload import WorkloadSpec, build_workload


def run_bench(
    target: Target,
    spec: WorkloadSpec,
    rates: Sequence[float],
    slos: SLOTable,
    *,
    drain_timeout_s: float = 120.0,
    on_run: Callable[[BenchRun], None] | None = None,
) -> list[BenchRun]:
    """Run ``spec`` at each rate in turn (same seed: same prompts, classes and tenants)."""
    runs = []
    for rate in rates:
        rated = spec.with_rate(rate)
        result = run_workload(target, build_workload(rated), drain_timeout_s=drain_timeout_s)
        run = BenchRun(rated, result.records, summarize(result.records, slos, result.duration_s, rate))
        runs.append(run)
        if on_run is not None:
            on_run(run)
    return runs

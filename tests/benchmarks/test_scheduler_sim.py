"""The scheduler on a simulated clock (benchmarks/scheduler_sim.py): deterministic, no model.

At a load where FCFS lets most critical requests miss their TPOT, pacing keeps every critical
and high request within its targets, at nearly FCFS's throughput.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from scheduler_sim import StepLaw, _scheduler, simulate  # noqa: E402

from mcp.engine.scheduler.step import PacingConfig  # noqa: E402
from mcp.ops.loadgen.workload import WorkloadSpec  # noqa: E402

LAW = StepLaw(step_s=0.024, sequence_s=0.004, prefill_token_s=0.0013)
SPEC = WorkloadSpec(scenario="mixed", rate=6.0, num_requests=300, max_tokens=32, seed=0)


def test_pacing_meets_critical_and_high_where_fcfs_misses_them():
    fcfs = simulate(_scheduler("fcfs", PacingConfig(enabled=False)), SPEC, LAW)
    unpaced = simulate(_scheduler("slo", PacingConfig(enabled=False)), SPEC, LAW)
    paced = simulate(_scheduler("slo", PacingConfig()), SPEC, LAW)
    assert fcfs.attainment["critical"] < 0.9 and unpaced.attainment["critical"] < 0.9
    assert paced.attainment["critical"] == 1.0 and paced.attainment["high"] >= 0.95
    assert paced.tokens_per_s >= 0.9 * fcfs.tokens_per_s
    assert paced.num_refused == fcfs.num_refused == 0

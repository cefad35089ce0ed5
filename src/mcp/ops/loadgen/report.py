"""The JSON report: the command, the workload, the target, and per run every raw record and the summary.

Schema ``mcp2026.bench.serve/1``::

    {"schema", "created", "command", "target": {...}, "workload": {...}, "slo_targets": {class: {ttft_s, tpot_s}},
     "calibration": {...} | null,
     "runs": [{"rate", "summary": RunSummary.to_dict(), "requests": [RequestRecord.to_dict(), ...]}],
     "sweep": {"goal", "max_rate_meeting": {class|"all": rate | null}} | null}
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp.base.errors import InvalidRequestError
from mcp.ops.loadgen.mix import SLOTable
from mcp.ops.loadgen.record import RequestRecord
from mcp.ops.loadgen.summary import ALL, ATTAINMENT_GOAL, RunSummary, max_rate_meeting
from mcp.ops.loadgen.workload import WorkloadSpec

SCHEMA = "mcp2026.bench.serve/1"


@dataclass(frozen=True)
class BenchRun:
    """One rate of a bench: its workload, raw records and summary."""

    spec: WorkloadSpec
    records: tuple[RequestRecord, ...]
    summary: RunSummary

    def to_dict(self) -> dict:
        return {"rate": self.spec.rate, "summary": self.summary.to_dict(),
                "requests": [record.to_dict() for record in self.records]}


def build_report(runs: Sequence[BenchRun], target: dict, slos: SLOTable, command: str,
                 calibration: dict | None = None) -> dict:
    summaries = [run.summary for run in runs]
    sweep = None
    if len(runs) > 1:
        names = [ALL, *dict.fromkeys(g.name for s in summaries for g in s.by_class)]
        sweep = {"goal": ATTAINMENT_GOAL, "max_rate_meeting": {n: max_rate_meeting(summaries, n) for n in names}}
    return {
        "schema": SCHEMA, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command": command,
        "target": target, "workload": runs[0].spec.to_dict(), "slo_targets": slos.to_dict(),
        "calibration": calibration, "runs": [run.to_dict() for run in runs], "sweep": sweep,
    }


def write_report(report: dict, path: str | Path) -> Path:
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as exc:
        raise InvalidRequestError(f"--json {path}: cannot write it ({exc}); give a writable path") from None
    return path

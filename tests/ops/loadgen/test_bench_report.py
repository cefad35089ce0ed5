"""The JSON report: its schema, and every raw record back as it was written."""

from __future__ import annotations

import json

import pytest

from mcp.base.errors import InvalidRequestError
from mcp.ops.loadgen.mix import SLOTable
from mcp.ops.loadgen.record import STATUSES, RequestRecord
from mcp.ops.loadgen.report import SCHEMA, BenchRun, build_report, write_report
from mcp.ops.loadgen.summary import summarize
from mcp.ops.loadgen.workload import WorkloadSpec

from loadgen_traces import TRACE

GROUP_KEYS = {"name", "num_requests", "num_ok", "num_refused", "num_errors", "num_timeouts", "num_good",
              "attainment", "goodput_rps", "throughput_rps", "output_tokens_per_s", "ttft", "tpot", "itl", "e2e"}
RECORD_KEYS = {"index", "slo_class", "tenant", "prompt_index", "max_tokens", "scheduled_s", "sent_s", "end_s",
               "status", "chunk_times_s", "output_tokens", "prompt_tokens", "finish_reason", "error", "retry_after_s"}


def runs(rates=(0.8,)) -> list[BenchRun]:
    spec = WorkloadSpec("poisson", 1.0, num_requests=8)
    return [BenchRun(spec.with_rate(rate), TRACE, summarize(TRACE, SLOTable.default(), 10.0, rate)) for rate in rates]


def written(tmp_path, rates=(0.8,)) -> dict:
    report = build_report(runs(rates), {"kind": "http", "url": "http://127.0.0.1:1/v1/completions"},
                          SLOTable.default(), "mcp2026 bench serve ...", None)
    path = write_report(report, tmp_path / "out" / "bench.json")
    return json.loads(path.read_text(encoding="utf-8"))


def test_report_schema(tmp_path):
    data = written(tmp_path)
    assert set(data) == {"schema", "created", "command", "target", "workload", "slo_targets", "calibration",
                         "runs", "sweep"}
    assert data["schema"] == SCHEMA and data["sweep"] is None and data["calibration"] is None
    assert data["slo_targets"]["critical"] == {"ttft_s": 1.0, "tpot_s": 0.1}
    assert data["workload"]["scenario"] == "poisson" and data["workload"]["class_mix"]["low"] == pytest.approx(0.4)
    (run,) = data["runs"]
    assert set(run) == {"rate", "summary", "requests"} and run["rate"] == 0.8
    summary = run["summary"]
    assert set(summary) == {"offered_rate", "duration_s", "overall", "by_class", "by_tenant"}
    assert [g["name"] for g in summary["by_tenant"]] == ["t"] and set(summary["by_tenant"][0]) == GROUP_KEYS
    assert set(summary["overall"]) == GROUP_KEYS
    assert set(summary["overall"]["ttft"]) == {"count", "mean", "p50", "p95", "p99"}
    assert summary["overall"]["num_good"] == 3 and summary["by_class"][3]["ttft"] is None
    for item in run["requests"]:
        assert set(item) == RECORD_KEYS and item["status"] in STATUSES


def test_raw_records_round_trip(tmp_path):
    records = tuple(RequestRecord.from_dict(item) for item in written(tmp_path)["runs"][0]["requests"])
    assert records == TRACE


def test_a_sweep_reports_distserve_goodput_per_class(tmp_path):
    data = written(tmp_path, rates=(0.5, 1.0))
    assert [run["rate"] for run in data["runs"]] == [0.5, 1.0]
    assert data["sweep"]["goal"] == 0.9
    assert set(data["sweep"]["max_rate_meeting"]) == {"all", "critical", "high", "medium", "low"}
    assert data["sweep"]["max_rate_meeting"]["medium"] == 1.0  # medium meets its SLO at both rates
    assert data["sweep"]["max_rate_meeting"]["critical"] is None


def test_unwritable_path_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(InvalidRequestError, match="--json .*cannot write it"):
        write_report({}, blocker / "bench.json")

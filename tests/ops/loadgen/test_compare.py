"""Side-by-side comparison and the issue's targets, on hand-built summaries."""

from __future__ import annotations

from mcp.ops.loadgen.compare import SystemRun, check_targets, format_comparison
from mcp.ops.loadgen.mix import SLOTable
from mcp.ops.loadgen.summary import RunSummary, summarize

from loadgen_traces import record


def run(good: dict[str, int], tokens: int = 4, duration_s: float = 10.0) -> RunSummary:
    """10 requests per class; ``good[class]`` of them meet their SLO, the rest are refused."""
    records = []
    for name, num_good in good.items():
        for i in range(10):
            chunks = tuple(0.1 + 0.01 * k for k in range(tokens))
            records.append(record(len(records), name, 0.0, chunks, chunks[-1]) if i < num_good
                           else record(len(records), name, 0.0, (), 0.0, "refused"))
    return summarize(records, SLOTable.default(), duration_s, 1.0)


def test_side_by_side_with_ratios_of_the_first_system():
    lines = format_comparison([SystemRun("slo", run({"critical": 10, "low": 5})),
                               SystemRun("fcfs", run({"critical": 5, "low": 10}))])
    assert lines[0].split() == ["slo", "fcfs", "slo/fcfs"]
    rows = {line[:25].strip(): line[25:].split() for line in lines[1:]}
    assert rows["attainment critical %"] == ["100", "50", "2.00x"]
    assert rows["attainment low %"] == ["50", "100", "0.50x"]
    assert rows["attainment all %"] == ["75", "75", "1.00x"]
    assert rows["goodput critical req/s"] == ["1", "0.5", "2.00x"]
    assert rows["throughput output tok/s"] == ["6", "6", "1.00x"]
    assert rows["refused"] == ["5", "5", "1.00x"]


def test_targets_met_and_not_met():
    met = check_targets([SystemRun("slo", run({"critical": 10, "high": 10, "low": 3})),
                         SystemRun("fcfs", run({"critical": 8, "high": 9, "low": 10}))])
    assert met[0] == "load: FCFS critical attainment 80.0% < 90%: the load the targets are set at"
    assert met[1:] == ["met      SLO critical attainment 100.0% >= 99%", "met      SLO high attainment 100.0% >= 95%",
                       "NOT met  SLO throughput 9.2 tok/s >= 90% of FCFS's 10.8"]
    unstressed = check_targets([SystemRun("slo", run({"critical": 9, "low": 10})),
                                SystemRun("fcfs", run({"critical": 10, "low": 10}))])
    assert "does not stress FCFS" in unstressed[0]
    assert unstressed[1].startswith("NOT met  SLO critical attainment 90.0%")
    assert unstressed[2] == "n/a      SLO high attainment >= 95%: the workload has no high requests"


def test_goodput_against_llama_cpp():
    (line,) = check_targets([SystemRun("slo", run({"critical": 9})), SystemRun("llamacpp", run({"critical": 6}))])
    assert line == "met      critical goodput 0.9 req/s >= 1.5 x llama.cpp's 0.6"
    (line,) = check_targets([SystemRun("slo", run({"critical": 8})), SystemRun("llamacpp", run({"critical": 6}))])
    assert line.startswith("NOT met")

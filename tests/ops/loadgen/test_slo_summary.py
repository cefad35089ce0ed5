"""Metric math on hand-built traces: every number worked out by hand (see traces.py)."""

from __future__ import annotations

import dataclasses

import pytest

from mcp.engine.scheduler.slo import SLOTarget
from mcp.ops.loadgen.metrics import latency_stats, request_metrics
from mcp.ops.loadgen.mix import SLOTable
from mcp.ops.loadgen.summary import RunSummary, max_rate_meeting, summarize
from mcp.ops.loadgen.table import format_sweep, format_table

from loadgen_traces import TRACE, record

TARGET = SLOTarget(ttft_s=1.0, tpot_s=0.1)


def test_request_metrics_of_one_stream():
    m = request_metrics(TRACE[0], TARGET)
    assert m.ttft_s == pytest.approx(0.5)
    assert m.e2e_s == pytest.approx(0.9)
    assert m.tpot_s == pytest.approx(0.4 / 3)
    assert m.itls_s == pytest.approx((0.1, 0.1, 0.2))
    assert not m.good
    assert request_metrics(TRACE[1], TARGET).good


def test_tpot_uses_token_counts_not_chunks_and_one_token_has_none():
    assert request_metrics(TRACE[7], SLOTarget(5.0, 0.3)).tpot_s == pytest.approx(0.25)
    one = request_metrics(TRACE[3], SLOTarget(3.0, 0.01))
    assert one.tpot_s is None and one.good  # within TTFT; no TPOT to miss


def test_a_stream_without_text_has_its_first_token_at_the_end():
    m = request_metrics(record(0, "low", 1.0, (), 1.4, output_tokens=1), TARGET)
    assert m.ttft_s == pytest.approx(0.4) and m.e2e_s == pytest.approx(0.4)


@pytest.mark.parametrize("index", [2, 5, 6])
def test_refused_failed_and_late_requests_are_never_good(index):
    m = request_metrics(TRACE[index], SLOTarget(100.0, 100.0))
    assert (m.good, m.ttft_s, m.e2e_s, m.itls_s) == (False, None, None, ())


def test_latency_stats_are_numpy_linear_percentiles():
    stats = latency_stats([0.5, 0.2, None, 2.5, 0.5, 1.0])
    assert stats.count == 5
    assert stats.mean == pytest.approx(0.94)
    assert stats.p50 == pytest.approx(0.5)
    assert stats.p95 == pytest.approx(2.2)  # rank 3.8 of [0.2, 0.5, 0.5, 1.0, 2.5]
    assert stats.p99 == pytest.approx(2.44)
    assert latency_stats([None]) is None


def summary() -> RunSummary:
    return summarize(TRACE, SLOTable.default(), duration_s=10.0, offered_rate=0.8)


def test_overall_counts_attainment_goodput_throughput():
    s = summary().overall
    assert (s.num_requests, s.num_ok, s.num_refused, s.num_errors, s.num_timeouts, s.num_good) == (8, 5, 1, 1, 1, 3)
    assert s.attainment == pytest.approx(3 / 8)
    assert s.goodput_rps == pytest.approx(0.3)
    assert s.throughput_rps == pytest.approx(0.5)
    assert s.output_tokens_per_s == pytest.approx((4 + 3 + 1 + 2 + 5) / 10)
    assert s.ttft.count == 5 and s.ttft.p50 == pytest.approx(0.5) and s.ttft.p95 == pytest.approx(2.2)
    assert s.tpot.count == 4 and s.tpot.p50 == pytest.approx((0.1 + 0.4 / 3) / 2)
    assert s.itl.count == 7 and s.itl.mean == pytest.approx((0.1 + 0.1 + 0.2 + 0.05 + 0.05 + 0.1 + 1.0) / 7)
    assert s.e2e.p50 == pytest.approx(0.9)


def test_per_class_summaries_in_class_order():
    s = summary()
    assert [g.name for g in s.by_class] == ["critical", "high", "medium", "low"]
    critical, high, medium, low = s.by_class
    assert (critical.num_requests, critical.num_good, critical.num_refused) == (3, 1, 1)
    assert critical.attainment == pytest.approx(1 / 3) and critical.goodput_rps == pytest.approx(0.1)
    assert high.attainment == pytest.approx(0.5) and high.ttft.p99 == pytest.approx(0.5 + 0.99 * 2.0)
    assert medium.attainment == 1.0 and medium.output_tokens_per_s == pytest.approx(0.5)
    assert low.attainment == 0.0 and low.ttft is None and (low.num_errors, low.num_timeouts) == (1, 1)
    assert s.group("medium") is medium and s.group("all") is s.overall


def test_classes_without_requests_are_left_out():
    s = summarize(TRACE[:2], SLOTable.default(), 2.0, 1.0)
    assert [g.name for g in s.by_class] == ["critical"] and s.group("low") is None


def test_per_tenant_summaries_show_who_got_served():
    records = [dataclasses.replace(r, tenant="acme" if r.index % 2 == 0 else "globex") for r in TRACE]
    s = summarize(records, SLOTable.default(), 10.0, 0.8)
    acme, globex = s.by_tenant  # in order of first arrival
    # acme: 0 (misses TPOT), 2 (refused), 4 (good), 6 (late); globex: 1 (good), 3 (misses TTFT), 5 (error), 7 (good)
    assert (acme.name, acme.num_requests, acme.num_good, acme.num_refused, acme.num_timeouts) == ("acme", 4, 1, 1, 1)
    assert (globex.name, globex.num_requests, globex.num_good, globex.num_errors) == ("globex", 4, 2, 1)
    assert acme.output_tokens_per_s == pytest.approx((4 + 2) / 10)
    assert globex.output_tokens_per_s == pytest.approx((3 + 1 + 5) / 10)
    table = format_table(s).splitlines()
    header = table.index(next(line for line in table if line.startswith("tenant")))
    assert table[header].split() == ["tenant", "reqs", "good", "attain", "goodput/s", "tok/s", "TTFT", "p99", "ms"]
    assert table[header + 1].split() == ["acme", "4", "1", "25.0%", "0.1", "0.6", "500"]
    assert table[header + 2].split() == ["globex", "4", "2", "50.0%", "0.2", "0.9", "2470"]  # TTFTs 0.2, 2.5, 1.0


def with_attainment(rate: float, good_critical: int, good_low: int) -> RunSummary:
    records = [record(i, "critical", 0.0, (0.1, 0.15), 0.15) if i < good_critical
               else record(i, "critical", 0.0, (), 0.0, "refused") for i in range(10)]
    records += [record(10 + i, "low", 0.0, (0.1,), 0.1) if i < good_low
                else record(10 + i, "low", 0.0, (), 0.0, "error") for i in range(10)]
    return summarize(records, SLOTable.default(), 1.0, rate)


def test_distserve_goodput_is_the_highest_rate_before_attainment_first_drops():
    sweep = [with_attainment(4.0, 10, 10), with_attainment(1.0, 10, 10), with_attainment(2.0, 9, 8),
             with_attainment(3.0, 8, 10)]
    assert max_rate_meeting(sweep, "critical") == 2.0
    assert max_rate_meeting(sweep, "low") == 1.0
    assert max_rate_meeting(sweep) == 1.0  # all: 17/20 at 2 req/s
    assert max_rate_meeting([with_attainment(1.0, 5, 5)]) is None


def test_tables_show_every_class_and_the_sweep():
    table = format_table(summary())
    lines = table.splitlines()
    assert lines[0].split()[:3] == ["class", "reqs", "ok"]
    assert lines[1].split()[:7] == ["critical", "3", "2", "1", "0", "1", "33.3%"]
    assert lines[5].split()[:7] == ["all", "8", "5", "1", "2", "3", "37.5%"]
    assert "throughput 0.5 req/s, 1.5 output tok/s, goodput 0.3 req/s" in lines[-1]
    sweep = format_sweep([with_attainment(1.0, 10, 10), with_attainment(2.0, 9, 8)]).splitlines()
    assert sweep[0].split() == ["rate", "critical", "low", "all", "goodput/s", "tok/s"]
    assert sweep[2].split()[:4] == ["2", "90.0%", "80.0%", "85.0%"]

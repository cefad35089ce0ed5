"""Hand-built request records with latencies worked out by hand (test_slo_summary, test_bench_report, test_plots)."""

from __future__ import annotations

from mcp.ops.loadgen.record import ERROR, OK, REFUSED, TIMEOUT, RequestRecord


def record(index, slo_class, sent, chunks, end, status=OK, output_tokens=None, **extra) -> RequestRecord:
    return RequestRecord(index=index, slo_class=slo_class, tenant="t", prompt_index=0, max_tokens=8,
                         scheduled_s=sent, sent_s=sent, end_s=end, status=status, chunk_times_s=tuple(chunks),
                         output_tokens=len(chunks) if output_tokens is None else output_tokens, **extra)


# Default targets: critical 1.0 s / 0.10 s, high 2.0 / 0.15, medium 5.0 / 0.30, low 20 / 1.0.
TRACE = (
    record(0, "critical", 0.0, (0.5, 0.6, 0.7, 0.9), 0.9),  # TTFT 0.5, TPOT 0.4/3 > 0.10: not good
    record(1, "critical", 1.0, (1.2, 1.25, 1.3), 1.3),  # TTFT 0.2, TPOT 0.05: good
    record(2, "critical", 2.0, (), 2.01, REFUSED, error="busy", retry_after_s=0.5),
    record(3, "high", 0.0, (2.5,), 2.5),  # one token: TTFT 2.5 > 2.0, no TPOT: not good
    record(4, "high", 1.0, (1.5, 1.6), 1.6),  # TTFT 0.5, TPOT 0.1: good
    record(5, "low", 0.5, (), 0.7, ERROR, error="RuntimeError: boom"),
    record(6, "low", 0.5, (1.0, 2.0), 9.0, TIMEOUT),
    record(7, "medium", 3.0, (4.0, 5.0), 5.0, output_tokens=5),  # 2 chunks, 5 tokens: TPOT 1.0/4 = 0.25: good
)

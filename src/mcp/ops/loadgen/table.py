"""The report as a readable text table: one row per class and one for all requests."""

from __future__ import annotations

from collections.abc import Sequence

from mcp.ops.loadgen.metrics import LatencyStats
from mcp.ops.loadgen.summary import GroupSummary, RunSummary

HEADER = ("class", "reqs", "ok", "refused", "failed", "good", "attain", "goodput/s",
          "TTFT p50/p95/p99 ms", "TPOT p50/p99 ms", "ITL p99 ms", "E2E p50/p99 s")


def format_table(summary: RunSummary) -> str:
    rows = [_row(group) for group in (*summary.by_class, summary.overall)]
    lines = _align([HEADER, *rows])
    if len(summary.by_tenant) > 1:
        lines += _align([("tenant", "reqs", "good", "attain", "goodput/s", "tok/s", "TTFT p99 ms"),
                         *(_tenant_row(group) for group in summary.by_tenant)])
    overall = summary.overall
    lines.append(
        f"offered {summary.offered_rate:.3g} req/s over {summary.duration_s:.1f} s: "
        f"throughput {overall.throughput_rps:.3g} req/s, {overall.output_tokens_per_s:.1f} output tok/s, "
        f"goodput {overall.goodput_rps:.3g} req/s")
    return "\n".join(lines)


def format_sweep(summaries: Sequence[RunSummary]) -> str:
    """Attainment per class at each offered rate."""
    names = list(dict.fromkeys(g.name for s in summaries for g in s.by_class))
    rows = [("rate", *names, "all", "goodput/s", "tok/s")]
    for s in summaries:
        cells = [_pct(g.attainment) if (g := s.group(n)) is not None else "-" for n in [*names, "all"]]
        rows.append((f"{s.offered_rate:.3g}", *cells, f"{s.overall.goodput_rps:.3g}",
                     f"{s.overall.output_tokens_per_s:.1f}"))
    return "\n".join(_align(rows))


def _row(group: GroupSummary) -> tuple[str, ...]:
    return (group.name, str(group.num_requests), str(group.num_ok), str(group.num_refused),
            str(group.num_errors + group.num_timeouts), str(group.num_good), _pct(group.attainment),
            f"{group.goodput_rps:.3g}", _ms(group.ttft, ("p50", "p95", "p99")), _ms(group.tpot, ("p50", "p99")),
            _ms(group.itl, ("p99",)), _s(group.e2e))


def _tenant_row(group: GroupSummary) -> tuple[str, ...]:
    return (group.name, str(group.num_requests), str(group.num_good), _pct(group.attainment),
            f"{group.goodput_rps:.3g}", f"{group.output_tokens_per_s:.1f}", _ms(group.ttft, ("p99",)))


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _ms(stats: LatencyStats | None, keys: tuple[str, ...]) -> str:
    return "-" if stats is None else "/".join(f"{1000 * getattr(stats, k):.0f}" for k in keys)


def _s(stats: LatencyStats | None) -> str:
    return "-" if stats is None else f"{stats.p50:.2f}/{stats.p99:.2f}"


def _align(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths)))
            for row in rows]

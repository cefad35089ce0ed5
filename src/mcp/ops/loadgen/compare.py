"""Several systems under the same workload, side by side, and the issue's targets checked.

The first system is the one compared: every ratio column is it ÷ another system, oriented so
that > 1 means the first did better (higher attainment, goodput, throughput).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mcp.ops.loadgen.summary import GroupSummary, RunSummary

CLASS_ORDER = ("critical", "high", "medium", "low", "all")


@dataclass(frozen=True)
class SystemRun:
    name: str  # "slo", "fcfs", "llamacpp", "sdk"
    summary: RunSummary


def format_comparison(systems: Sequence[SystemRun]) -> list[str]:
    first, others = systems[0], systems[1:]
    header = ("", *(s.name for s in systems), *(f"{first.name}/{o.name}" for o in others))
    rows = [header]
    for label, value in _metrics(systems):
        values = [value(s.summary) for s in systems]
        rows.append((label, *(_number(v) for v in values), *(_ratio(values[0], v) for v in values[1:])))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths)))
            for row in rows]


def _metrics(systems: Sequence[SystemRun]) -> list[tuple[str, Callable[[RunSummary], float | None]]]:
    present = [n for n in CLASS_ORDER if any(s.summary.group(n) is not None for s in systems)]
    metrics: list[tuple[str, Callable[[RunSummary], float | None]]] = []
    for name in present:
        percent = lambda g: None if g.attainment is None else 100 * g.attainment  # noqa: E731
        metrics.append((f"attainment {name} %", _field(name, percent)))
    for name in present:
        metrics.append((f"goodput {name} req/s", _field(name, lambda g: g.goodput_rps)))
    metrics += [
        ("throughput req/s", _field("all", lambda g: g.throughput_rps)),
        ("throughput output tok/s", _field("all", lambda g: g.output_tokens_per_s)),
        ("refused", _field("all", lambda g: g.num_refused)),
        ("failed or late", _field("all", lambda g: g.num_errors + g.num_timeouts)),
    ]
    return metrics


def _field(name: str, read: Callable[[GroupSummary], float | None]) -> Callable[[RunSummary], float | None]:
    return lambda summary: None if (group := summary.group(name)) is None else read(group)


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.3g}"


def _ratio(ours: float | None, theirs: float | None) -> str:
    if ours is None or theirs is None:
        return "-"
    if theirs == 0:
        return "-" if ours == 0 else "inf"
    return f"{ours / theirs:.2f}x"


def check_targets(systems: Sequence[SystemRun]) -> list[str]:
    """Issue 4's targets, each line ``met`` / ``NOT met`` with the numbers, for the systems present."""
    by_name = {s.name: s.summary for s in systems}
    lines = []
    slo, fcfs, llama = by_name.get("slo"), by_name.get("fcfs"), by_name.get("llamacpp")
    if slo is not None and fcfs is not None:
        lines += _slo_vs_fcfs(slo, fcfs)
    if slo is not None and llama is not None:
        ours, theirs = _goodput(slo, "critical"), _goodput(llama, "critical")
        lines.append(_verdict(ours >= 1.5 * theirs,
                              f"critical goodput {ours:.3g} req/s >= 1.5 x llama.cpp's {theirs:.3g}"))
    return lines


def _slo_vs_fcfs(slo: RunSummary, fcfs: RunSummary) -> list[str]:
    fcfs_critical = _attainment(fcfs, "critical")
    stressed = fcfs_critical < 0.9
    lines = [f"load: FCFS critical attainment {100 * fcfs_critical:.1f}% "
             + ("< 90%: the load the targets are set at" if stressed
                else ">= 90%: this load does not stress FCFS; raise the rate for a verdict")]
    throughput, base = slo.overall.output_tokens_per_s, fcfs.overall.output_tokens_per_s
    lines += [
        _class_goal(slo, "critical", 0.99),
        _class_goal(slo, "high", 0.95),
        _verdict(throughput >= 0.9 * base, f"SLO throughput {throughput:.1f} tok/s >= 90% of FCFS's {base:.1f}"),
    ]
    return lines


def _class_goal(summary: RunSummary, name: str, goal: float) -> str:
    if summary.group(name) is None:
        return f"n/a      SLO {name} attainment >= {100 * goal:.0f}%: the workload has no {name} requests"
    value = _attainment(summary, name)
    return _verdict(value >= goal, f"SLO {name} attainment {100 * value:.1f}% >= {100 * goal:.0f}%")


def _attainment(summary: RunSummary, name: str) -> float:
    group = summary.group(name)
    return 0.0 if group is None or group.attainment is None else group.attainment


def _goodput(summary: RunSummary, name: str) -> float:
    group = summary.group(name)
    return 0.0 if group is None else group.goodput_rps


def _verdict(ok: bool, text: str) -> str:
    return f"{'met    ' if ok else 'NOT met'}  {text}"

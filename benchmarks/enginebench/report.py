"""The printed report: one table (rows = figures, columns = engines, then the ratio to
llama.cpp) with the run's context above it, and its section in RESULTS.md."""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass
from pathlib import Path

ENGINES = ("ours", "lean", "llamacpp", "transformers")
TITLES = {"ours": "ours", "lean": "ours, lean", "llamacpp": "llama.cpp", "transformers": "transformers"}
RATIOED = ("ours", "lean")  # the engines with a ratio column to llama.cpp
SECTION_START, SECTION_END = "<!-- engine.py -->", "<!-- /engine.py -->"
LABEL_WIDTH, CELL_WIDTH = 40, 20


@dataclass(frozen=True)
class Row:
    key: str
    label: str
    better: str  # "higher": ratio ours/llama.cpp; "lower": llama.cpp/ours; "info": no ratio


def figure_rows(batch_sizes, pp_tokens, decode_tokens, chat_tokens) -> list[Row]:
    return [
        Row("pp_tps", f"prompt processing, {pp_tokens} tok (tok/s)", "higher"),
        Row("decode1_tps", f"decode, batch 1, {decode_tokens} tok (tok/s)", "higher"),
        *(Row(f"decode_b{size}_tps", f"aggregate decode, {size} seqs (tok/s)", "higher") for size in batch_sizes),
        Row("ttft_ms", f"TTFT, {chat_tokens}-token chat prompt (ms)", "lower"),
        Row("load_cold_ms", "load, cold (ms)", "lower"),
        Row("load_warm_ms", "load, warm (ms)", "lower"),
        Row("rss_peak_b1_mib", "peak RSS up to batch-1 runs (MiB)", "lower"),
        Row("rss_target_mib", "  target: 1.5 x .mcp file + KV (MiB)", "info"),
        Row("rss_peak_mib", "peak RSS, whole run (MiB)", "lower"),
        Row("rss_imports_mib", "RSS before loading (MiB)", "info"),
        Row("weight_mb", "weights read per token (MB)", "info"),
        Row("bound_tps", "batch-1 decode bound (tok/s)", "info"),
        Row("bound_pct", "batch-1 decode / bound (%)", "info"),
    ]


def add_derived(figures: dict[str, list[float]], info: dict, bandwidth_gbps: float | None) -> None:
    """Weights read per token, the bandwidth bound it gives, and decode's share of it."""
    weight_bytes = info.get("weight_bytes")
    if not weight_bytes:
        return
    figures["weight_mb"] = [weight_bytes / 1e6]
    if bandwidth_gbps:
        bound = bandwidth_gbps * 1e9 / weight_bytes
        figures["bound_tps"] = [bound]
        if figures.get("decode1_tps"):
            figures["bound_pct"] = [100 * statistics.median(figures["decode1_tps"]) / bound]


def table(rows: list[Row], figures_by_engine: dict[str, dict[str, list[float] | str]],
          marks: dict[str, dict[str, str]] | None = None, engines: tuple[str, ...] = ENGINES) -> list[str]:
    """Cells are ``median [min-max]``; an engine left out is "-", a figure it cannot give "n/a".

    ``marks[engine][figure]`` is appended to that cell (a footnote sign); ``engines``: the
    columns, in order.
    """
    marks = marks or {}
    ratioed = [engine for engine in RATIOED if engine in figures_by_engine]
    header = ("figure".ljust(LABEL_WIDTH) + "".join(TITLES[e].rjust(CELL_WIDTH) for e in engines)
              + "".join(f"{e} vs llama.cpp".rjust(20) for e in ratioed))
    lines = [header, "-" * len(header)]
    for row in rows:
        cells = [_cell(figures_by_engine.get(engine), row.key) + marks.get(engine, {}).get(row.key, "")
                 for engine in engines]
        ratios = [_ratio(row, figures_by_engine.get(e), figures_by_engine.get("llamacpp")) for e in ratioed]
        lines.append(row.label.ljust(LABEL_WIDTH) + "".join(c.rjust(CELL_WIDTH) for c in cells)
                     + "".join(ratio.rjust(20) for ratio in ratios))
    return lines


def _cell(figures, key: str) -> str:
    if figures is None:
        return "-"
    values = figures.get(key)
    if isinstance(values, str):
        return values  # "n/a", with the reason in the engine's notes
    if not values:
        return "n/a"
    if len(values) == 1:
        return number(values[0])
    return f"{number(statistics.median(values))} [{number(min(values))}-{number(max(values))}]"


def _ratio(row: Row, ours, llama) -> str:
    if row.better == "info" or not ours or not llama:
        return ""
    mine, theirs = ours.get(row.key), llama.get(row.key)
    if not mine or not theirs or isinstance(mine, str) or isinstance(theirs, str):
        return ""
    mine, theirs = statistics.median(mine), statistics.median(theirs)
    value = mine / theirs if row.better == "higher" else theirs / mine
    return f"{value:.2f}x"


@dataclass(frozen=True)
class Target:
    """One of issue 3's targets, for one of our engines' ``figure``. ``ratio_to``: the
    llama.cpp figure it is a ratio to (ours / llama.cpp's, in the same run); else the figure
    itself meets ``bound``, or the engine's own ``bound_figure`` (the RSS target row)."""

    label: str
    figure: str
    better: str  # "higher" or "lower": the side of the bound that meets it
    bound: float = 0.0
    ratio_to: str | None = None
    bound_figure: str | None = None


def issue_targets(batch_sizes) -> list[Target]:
    targets = [
        Target("prompt processing >= 2.5x llama.cpp", "pp_tps", "higher", 2.5, ratio_to="pp_tps"),
        Target("batch-1 decode >= 1.0x llama.cpp", "decode1_tps", "higher", 1.0, ratio_to="decode1_tps"),
        Target("TTFT <= 0.5x llama.cpp's", "ttft_ms", "lower", 0.5, ratio_to="ttft_ms"),
    ]
    if batch_sizes:
        largest = max(batch_sizes)
        targets.append(Target(f"{largest} seqs aggregate >= 3x llama.cpp batch 1", f"decode_b{largest}_tps",
                              "higher", 3.0, ratio_to="decode1_tps"))
    return targets + [
        Target("warm load <= 100 ms", "load_warm_ms", "lower", 100.0),
        Target("peak RSS, batch-1 runs <= target row", "rss_peak_b1_mib", "lower", bound_figure="rss_target_mib"),
    ]


def target_lines(targets: list[Target], figures_by_engine: dict[str, dict | None],
                 title: str = "issue 3's targets, this run (medians):") -> list[str]:
    """Each target, and for each of our engines its figure (a ratio to llama.cpp's where the
    target is one) and whether this run meets it."""
    ours = [engine for engine in RATIOED if figures_by_engine.get(engine)]
    lines = [title]
    for target in targets:
        cells = [f"{TITLES[engine]} {_target_cell(target, figures_by_engine[engine], figures_by_engine.get('llamacpp'))}"
                 for engine in ours]
        lines.append(f"  {target.label:<{LABEL_WIDTH + 4}}" + "".join(cell.ljust(CELL_WIDTH + 6) for cell in cells).rstrip())
    return lines


def _target_cell(target: Target, mine: dict, llama: dict | None) -> str:
    value = median_figure(mine, target.figure)
    if value is None:
        return "n/a"
    if target.ratio_to:
        theirs = median_figure(llama, target.ratio_to)
        if theirs is None:
            return "no llama.cpp figure"
        value, bound, shown = value / theirs, target.bound, f"{value / theirs:.2f}x"
    else:
        bound = median_figure(mine, target.bound_figure) if target.bound_figure else target.bound
        if bound is None:
            return "n/a"
        shown = f"{value:.1f}"  # one decimal: a figure just past its bound shows it
    met = value >= bound if target.better == "higher" else value <= bound
    return f"{shown} {'met' if met else 'MISSED'}"


def median_figure(figures: dict | None, key: str) -> float | None:
    values = (figures or {}).get(key)
    if not values or isinstance(values, str):
        return None
    return statistics.median(values)


def number(value: float) -> str:
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def write_section(path: Path, command: str, lines: list[str]) -> None:
    """Put this run's report into ``path`` between the engine.py markers (replaced if there)."""
    body = "\n".join([
        SECTION_START,
        "## Side by side: ours, llama.cpp, transformers (benchmarks/engine.py)",
        "",
        f"`{command}`",
        "",
        "```",
        *lines,
        "```",
        SECTION_END,
    ])
    text = path.read_text() if path.exists() else "# Benchmark results\n"
    pattern = re.compile(re.escape(SECTION_START) + ".*?" + re.escape(SECTION_END), re.DOTALL)
    if pattern.search(text):
        text = pattern.sub(lambda _: body, text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + body
    path.write_text(text.rstrip("\n") + "\n")

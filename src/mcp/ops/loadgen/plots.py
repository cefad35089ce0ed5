"""PNG plots of a bench: latency CDFs per class, and SLO attainment against offered load.

matplotlib with the Agg backend (no display needed); install the ``bench`` extra.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from mcp.base.errors import InvalidRequestError
from mcp.ops.loadgen.metrics import request_metrics
from mcp.ops.loadgen.mix import SLOTable
from mcp.ops.loadgen.report import BenchRun
from mcp.ops.loadgen.summary import ALL, ATTAINMENT_GOAL

COLORS = {"critical": "#d62728", "high": "#ff7f0e", "medium": "#1f77b4", "low": "#7f7f7f", ALL: "#000000"}


def load_pyplot():
    try:
        import matplotlib
    except ImportError:
        raise InvalidRequestError("--plots needs matplotlib: pip install 'mcp2026[bench]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _ticker():
    from matplotlib import ticker

    return ticker


# (metric of RequestMetrics, axis label, panel title, SLOTarget field drawn as a dotted line)
CDF_PANELS = (
    ("ttft_s", "TTFT (s)", "TTFT (dotted: the class's target)", "ttft_s"),
    ("tpot_s", "TPOT (s)", "time per output token (dotted: target)", "tpot_s"),
    ("e2e_s", "E2E latency (s)", "end-to-end latency", None),
)


def plot_latency_cdf(run: BenchRun, slos: SLOTable, path: Path, title: str) -> Path:
    """TTFT, TPOT and E2E panels: per class the share of its requests done within x seconds."""
    plt = load_pyplot()
    figure, axes = plt.subplots(1, len(CDF_PANELS), figsize=(15, 4.2))
    for axis, (metric, label, panel_title, target_field) in zip(axes, CDF_PANELS):
        for name in slos.names:
            _plot_class_cdf(axis, run, slos, name, metric)
            if target_field is not None and any(r.slo_class == name for r in run.records):
                target = getattr(slos.target(name), target_field)
                axis.axvline(target, color=COLORS.get(name), linestyle=":", linewidth=1)
        _log_axis(axis, label)
        axis.set_title(panel_title, fontsize=10)
    figure.suptitle(title, fontsize=11)
    return _save(figure, plt, path)


def _plot_class_cdf(axis, run: BenchRun, slos: SLOTable, name: str, metric: str) -> None:
    records = [r for r in run.records if r.slo_class == name]
    values = sorted(v for r in records if (v := _metric(r, slos, metric)) is not None)
    if not values:
        return
    # the curve ends below 1 when some of the class's requests never finished (or, for TPOT, had one token)
    shares = [0.0, *((i + 1) / len(records) for i in range(len(values)))]
    axis.step([values[0], *values], shares, where="post", color=COLORS.get(name), label=f"{name} (n={len(records)})")


def _log_axis(axis, label: str) -> None:
    ticker = _ticker()
    axis.set_xscale("log")
    axis.xaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    axis.xaxis.set_major_formatter(ticker.FuncFormatter(lambda value, _: f"{value:g}"))
    axis.xaxis.set_minor_formatter(ticker.NullFormatter())
    axis.set_xlabel(label + ", log scale")
    axis.set_ylabel("share of the class's requests")
    axis.set_ylim(0, 1.02)
    axis.grid(alpha=0.3)
    axis.legend(loc="upper left", fontsize=8)


def _metric(record, slos: SLOTable, metric: str) -> float | None:
    return getattr(request_metrics(record, slos.target(record.slo_class)), metric)


def plot_attainment(runs: Sequence[BenchRun], path: Path, title: str) -> Path:
    """SLO attainment per class (and all) against the offered rate of each run of a sweep."""
    plt = load_pyplot()
    figure, axis = plt.subplots(figsize=(7, 4.2))
    ordered = sorted(runs, key=lambda run: run.spec.rate)
    names = [*dict.fromkeys(g.name for run in ordered for g in run.summary.by_class), ALL]
    for order, name in enumerate(names):
        points = [(run.spec.rate, g.attainment) for run in ordered
                  if (g := run.summary.group(name)) is not None and g.attainment is not None]
        if points:
            # markers shrink by class so that classes with equal attainment stay visible
            axis.plot(*zip(*points), marker="o", markersize=10 - 1.5 * order, color=COLORS.get(name), label=name,
                      linewidth=2.5 if name == ALL else 1.5, linestyle="--" if name == ALL else "-")
    axis.axhline(ATTAINMENT_GOAL, color="#2ca02c", linestyle=":", linewidth=1, label="90% goal")
    axis.set_xlabel("offered load (requests/s)")
    axis.set_ylabel("SLO attainment")
    axis.set_ylim(-0.02, 1.02)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    axis.set_title(title, fontsize=11)
    return _save(figure, plt, path)


def write_plots(runs: Sequence[BenchRun], slos: SLOTable, folder: str | Path, title: str) -> list[Path]:
    """``latency_cdf.png`` (of each rate, ``latency_cdf_rate<r>.png`` in a sweep) and ``attainment.png``."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidRequestError(f"--plots {folder}: cannot make the folder ({exc})") from None
    if len(runs) == 1:
        (run,) = runs
        return [plot_latency_cdf(run, slos, folder / "latency_cdf.png", f"{title} at {run.spec.rate:.3g} req/s")]
    paths = [plot_latency_cdf(run, slos, folder / f"latency_cdf_rate{run.spec.rate:g}.png",
                              f"{title} at {run.spec.rate:.3g} req/s") for run in runs]
    return [*paths, plot_attainment(runs, folder / "attainment.png", f"{title}: SLO attainment vs load")]


def _save(figure, plt, path: Path) -> Path:
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path

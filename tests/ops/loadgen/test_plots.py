"""The PNG plots: files that open as images, with each class's curve drawn in its colour."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib import image

from mcp.base.errors import InvalidRequestError
from mcp.ops.loadgen.mix import SLOTable
from mcp.ops.loadgen.plots import COLORS, write_plots
from mcp.ops.loadgen.report import BenchRun
from mcp.ops.loadgen.summary import summarize
from mcp.ops.loadgen.workload import WorkloadSpec

from loadgen_traces import TRACE


def runs(rates) -> list[BenchRun]:
    spec = WorkloadSpec("poisson", 1.0, num_requests=8)
    return [BenchRun(spec.with_rate(r), TRACE, summarize(TRACE, SLOTable.default(), 10.0, r)) for r in rates]


def pixels_of(png, color: str) -> int:
    pixels = image.imread(png)[..., :3]
    rgb = np.array([int(color[i:i + 2], 16) for i in (1, 3, 5)]) / 255
    return int(np.sum(np.all(np.abs(pixels - rgb) < 0.02, axis=-1)))


def test_one_run_draws_the_latency_cdf_of_each_class(tmp_path):
    (path,) = write_plots(runs([0.8]), SLOTable.default(), tmp_path / "plots", "test")
    assert path.name == "latency_cdf.png" and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    height, width = image.imread(path).shape[:2]
    assert (width, height) == (1650, 462)  # three panels: TTFT, TPOT, E2E
    # low has no finished request: its legend entry and target line but no curve, so far fewer pixels
    legend_and_target = pixels_of(path, COLORS["low"])
    for name in ("critical", "high", "medium"):
        assert pixels_of(path, COLORS[name]) > legend_and_target + 500, name


def test_a_sweep_adds_attainment_against_load(tmp_path):
    paths = write_plots(runs([0.5, 1.0, 2.0]), SLOTable.default(), tmp_path, "test")
    assert [p.name for p in paths] == ["latency_cdf_rate0.5.png", "latency_cdf_rate1.png", "latency_cdf_rate2.png",
                                       "attainment.png"]
    for name in ("critical", "high", "medium", "low", "all"):
        assert pixels_of(paths[-1], COLORS[name]) > 100, name


def test_a_plots_path_that_is_a_file_is_a_clear_error(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(InvalidRequestError, match="--plots .*cannot make the folder"):
        write_plots(runs([1.0]), SLOTable.default(), tmp_path / "f", "test")

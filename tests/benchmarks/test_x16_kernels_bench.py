"""benchmarks/x16_kernels.py: a small run prints a row per kind and build with both speeds and
their ratio, and refuses a shape the re-laid kinds cannot take."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "x16_kernels.py"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300)


def test_a_small_run_prints_every_kind_with_both_speeds_and_the_ratio():
    done = run("--rows", "32", "--cols", "512", "--repeats", "2", "--cpu-time")
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()
            if re.match(r"^q\d_\w+\s+(avx512|avx2|scalar)\s+[\d.]+\s+[\d.]+\s+[\d.]+x$", line)]
    assert {row[0] for row in rows} == {"q4_0", "q4_1", "q4_k", "q5_0", "q5_1", "q5_k", "q6_k", "q8_0"}
    assert len(rows) == 8 * len({row[1] for row in rows})  # every kind on every build measured
    for kind, build, exact, fast, ratio in rows:
        assert float(exact) >= 0 and float(fast) >= 0 and float(ratio[:-1]) > 0


def test_a_shape_the_tiles_cannot_take_is_refused():
    done = run("--rows", "24")
    assert done.returncode == 2 and "--rows must be a multiple of 16" in done.stderr


def test_the_many_row_comparison_prints_each_kind_and_row_count_with_the_ratio():
    done = run("--rows", "32", "--cols", "512", "--repeats", "2", "--cpu-time", "--activations", "3,20")
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()
            if re.match(r"^q\d_\w+\s+\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+x$", line)]
    assert sorted((row[0], int(row[1])) for row in rows) == sorted(
        (kind, m) for kind in ("q4_0", "q4_1", "q4_k", "q5_0", "q5_1", "q5_k", "q6_k", "q8_0") for m in (3, 20))
    assert all(float(row[2]) > 0 and float(row[3]) > 0 for row in rows)

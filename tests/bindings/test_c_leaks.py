"""No leak reported in libmcp: the C test programs and libmcp built with AddressSanitizer, its
leak checker run at exit. Python, torch and OpenSSL keep memory to the end on purpose (LSan
reports that too), so a report counts when a stack of it passes through libmcp's own code; a
planted leak (leaky.c) shows that such reports are found."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from bindings_build import build_libmcp, child_env, compile_program

ASAN = ("-fsanitize=address", "-fno-omit-frame-pointer")
# exitcode=0: the process ends normally; the report is read below. malloc_context_size=2: an
# allocation's stack is the allocator and its direct caller, which for every allocation libmcp
# makes is libmcp itself; deeper stacks make the interpreter's and torch's ~170,000 kept
# allocations so many distinct reports that LSan stops at its cap of 5,000 and could miss ours.
# symbolize=0: frames name their library (libmcp.so.1+0x...), which is enough. The engine's
# libraries are not built with ASan, so ODR and new/delete-mismatch checks would judge only them.
ASAN_OPTIONS = ("detect_leaks=1:exitcode=0:malloc_context_size=2:symbolize=0:detect_odr_violation=0:"
                "alloc_dealloc_mismatch=0")


@pytest.fixture(scope="module")
def asan_programs(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("asan")
    libdir = build_libmcp(out / "lib", *ASAN)
    return lambda name: compile_program(name, libdir, out, *ASAN)


def leaks_in_libmcp(report: str) -> list[str]:
    """The leak reports whose allocation stack passes through libmcp."""
    blocks = re.split(r"\n(?=(?:Direct|Indirect) leak of)", report)
    return [block for block in blocks if re.match(r"(Direct|Indirect) leak of", block)
            and "libmcp.so" in block]


def run_asan(binary: Path, *args: str) -> str:
    done = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=900,
                          env=child_env(ASAN_OPTIONS=ASAN_OPTIONS))
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    assert "Too many leaks" not in done.stderr, "LSan hit its cap: a leak of ours could be missed"
    assert "ERROR: AddressSanitizer" not in done.stderr.replace("ERROR: LeakSanitizer", ""), done.stderr[-4000:]
    return done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("program", ["load_cycles", "stream_cancel"])
def test_no_leak_in_libmcp(program: str, asan_programs, smollm2_auto_mcp: Path) -> None:
    report = run_asan(asan_programs(program), str(smollm2_auto_mcp))
    assert leaks_in_libmcp(report) == [], "\n".join(leaks_in_libmcp(report))


@pytest.mark.slow
def test_a_planted_leak_is_reported_in_libmcp(asan_programs, smollm2_auto_mcp: Path) -> None:
    report = run_asan(asan_programs("leaky"), str(smollm2_auto_mcp))
    leaks = leaks_in_libmcp(report)
    assert leaks, report[-4000:]  # the result's struct, text and token ids
    assert any(re.match(r"Direct leak of \d+ byte", block) for block in leaks), "\n".join(leaks)

"""The `mcp2026` console script, run as a user runs it: a subprocess, real files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CLI = str(Path(sys.executable).with_name("mcp2026"))


def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=timeout)


def test_help_and_version():
    assert run("--version").stdout.startswith("mcp2026 ")
    out = run("--help").stdout
    for command in ("pull", "compile", "inspect", "run"):
        assert command in out


def test_pull_list_shows_the_catalog():
    proc = run("pull", "--list")
    assert proc.returncode == 0
    assert "smollm2-135m-instruct" in proc.stdout and "Apache-2.0" in proc.stdout


def test_compile_inspect_and_run(tmp_path, smollm2_gguf):
    out = tmp_path / "smol.mcp"
    proc = run("compile", str(smollm2_gguf), "-o", str(out), "--name", "smol")
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {out}" in proc.stdout
    shown = run("inspect", "--verify", str(out))
    assert shown.returncode == 0, shown.stderr
    for fact in ("576", "1536", "49152", "q4_1", "int8", "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
                 "every tensor matches"):
        assert fact in shown.stdout
    plan = run("inspect", "--plan", str(out))
    assert plan.returncode == 0, plan.stderr
    assert "210 tensors  decode mcp-q4_1" in plan.stdout and "model.layers.0.mlp.up_proj.weight" not in plan.stdout
    assert "1 tensors  decode mcp-int8" in plan.stdout  # the tied Q8_0 embedding/head, exact
    answer = run("run", str(out), "The capital of France is", "--raw", "--max-tokens", "8", "--temperature", "0")
    assert answer.returncode == 0, answer.stderr
    assert "Paris" in answer.stdout


def test_run_lean_answers_as_run_does(smollm2_auto_mcp):
    args = (str(smollm2_auto_mcp), "The capital of France is", "--raw", "--max-tokens", "16", "--temperature", "0",
            "--threads", "2")
    lean, full = run("run", "--lean", *args), run("run", *args)
    assert lean.returncode == 0 and full.returncode == 0, lean.stderr + full.stderr
    assert "Paris" in lean.stdout
    assert lean.stdout == full.stdout


def test_run_lean_asks_for_a_pull_instead_of_compiling(tmp_path):
    proc = subprocess.run([CLI, "run", "--lean", "smollm2-135m-instruct", "hi"], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "MCP_HOME": str(tmp_path)})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "not pulled yet: run `mcp2026 pull smollm2-135m-instruct` first" in proc.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("inspect", "/nonexistent/model.mcp"), "/nonexistent/model.mcp: no such model file"),
        (("run", "--lean", "/nonexistent/model.mcp", "hi"), "'/nonexistent/model.mcp' not found"),
        (("compile", "/nonexistent/model.gguf", "-o", "x.mcp"), "no such file or folder to compile"),
        (("compile", "/etc/hostname", "-o", "x.mcp"), "not a GGUF file"),
        (("inspect", "/etc/hostname"), "not a .mcp file"),
        (("pull", "no-such-model"), "not in the model catalog"),
    ],
)
def test_errors_are_one_line_and_exit_2(args, message):
    proc = run(*args)
    assert proc.returncode == 2
    assert proc.stderr.startswith("mcp2026: error: ") and message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_inspect_verify_catches_a_flipped_byte(tmp_path, smollm2_mcp):
    flipped = tmp_path / "flipped.mcp"
    data = bytearray(smollm2_mcp.read_bytes())
    data[len(data) // 2] ^= 0x01
    flipped.write_bytes(data)
    assert run("inspect", str(flipped)).returncode == 0  # header intact: inspect alone reads it
    proc = run("inspect", "--verify", str(flipped))
    assert proc.returncode == 2
    assert str(flipped) in proc.stderr and "sha256" in proc.stderr

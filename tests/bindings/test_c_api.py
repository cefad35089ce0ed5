"""The C API through its test programs (tests/bindings/c): each behaviour is one program, run
against the default model, whose output and exit status are checked here."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from bindings_build import ROOT, child_env


def run(binary: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    done = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=600, env=child_env(**env))
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_infer_gives_greedy_tokens_and_usage(c_programs, smollm2_auto_mcp: Path) -> None:
    out = run(c_programs("infer"), str(smollm2_auto_mcp), "The capital of France is", "6").stdout
    assert "finish: length" in out
    assert len(re.search(r"ids:((?: \d+)+)", out).group(1).split()) == 6
    assert "Paris" in out


@pytest.mark.parametrize("program", ["stream_cancel", "chat", "threads", "load_cycles"])
def test_program_passes(program: str, c_programs, smollm2_auto_mcp: Path) -> None:
    out = run(c_programs(program), str(smollm2_auto_mcp)).stdout
    if program == "threads":
        assert re.search(r"max_sequences_in_step=([2-8]) finished=8", out), out


def test_each_error_has_its_code_and_message(c_programs, smollm2_auto_mcp: Path, tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.mcp"
    foreign.write_bytes(b"GGUF" + bytes(200))
    out = run(c_programs("errors"), str(smollm2_auto_mcp), str(foreign)).stdout
    for code in ["MCP_ERR_CONFIG", "MCP_ERR_MODEL_NOT_FOUND", "MCP_ERR_MODEL_FORMAT", "MCP_ERR_INVALID_REQUEST",
                 "MCP_ERR_CONTEXT_LENGTH", "MCP_ERR_ARGUMENT", "MCP_ERR_CANCELLED"]:
        assert f"{code}: " in out, out
    assert "MCP_ERR_CANCELLED: the model was unloaded while this request ran" in out


def test_a_missing_interpreter_is_named_in_the_error(c_programs, smollm2_auto_mcp: Path, tmp_path: Path) -> None:
    done = subprocess.run([str(c_programs("infer")), str(smollm2_auto_mcp), "hi", "2"], capture_output=True,
                          text=True, timeout=60, env=child_env(MCP_PYTHON=str(tmp_path / "no-venv" / "bin" / "python")))
    assert done.returncode == 1
    assert "no Python interpreter at" in done.stderr and "no-venv/bin/python" in done.stderr, done.stderr
    assert "MCP_PYTHON" in done.stderr


def test_an_interpreter_without_the_package_is_named(c_programs, smollm2_auto_mcp: Path, tmp_path: Path) -> None:
    subprocess.run(["python3", "-m", "venv", "--without-pip", str(tmp_path / "bare")], check=True)
    env = child_env(MCP_PYTHON=str(tmp_path / "bare" / "bin" / "python"))
    env.pop("PYTHONPATH")
    done = subprocess.run([str(c_programs("infer")), str(smollm2_auto_mcp), "hi", "2"], capture_output=True,
                          text=True, timeout=60, env=env)
    assert done.returncode == 1
    assert "cannot import mcp.runtime" in done.stderr and "install mcp2026" in done.stderr, done.stderr


@pytest.mark.slow
def test_the_c_quickstart_builds_with_pkg_config_and_answers(libmcp: Path, smollm2_auto_mcp: Path,
                                                              tmp_path: Path) -> None:
    """examples/c/quickstart.c, built as docs/bindings.md says, run in a folder with its config."""
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", str(libmcp / "mcp.pc")], check=True,
                           capture_output=True, text=True).stdout.split()
    assert f"-I{ROOT / 'include'}" in flags and "-lmcp" in flags
    binary = tmp_path / "quickstart"
    subprocess.run(["cc", str(ROOT / "examples" / "c" / "quickstart.c"), *flags, "-o", str(binary)], check=True)
    config = (ROOT / "examples" / "mcp-config.yaml").read_text()
    (tmp_path / "mcp-config.yaml").write_text(
        config.replace("runtime:\n", f"runtime:\n  model_dir: {smollm2_auto_mcp.parent}\n", 1))
    done = subprocess.run([str(binary)], cwd=tmp_path, capture_output=True, text=True, timeout=600, env=child_env())
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.split()) > 20, done.stdout  # sampled (temperature 0.7): the words vary

"""`mcp2026 check consistency` refuses bad input with exit status 2 before any engine loads."""

from __future__ import annotations

import subprocess
import sys


def _cli(*args):
    command = [sys.executable, "-m", "mcp.commands.cli", "check", "consistency", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def test_unknown_engines_and_bad_suites_exit_2_before_loading(tmp_path):
    assert "unknown engine 'vllm'" in _cli("--suite", "ci", "--engines", "native-fp32,vllm").stderr
    bad = tmp_path / "suite.yaml"
    bad.write_text("suite: x\nversion: 1\nprompts: [{id: a, kind: raw}]\n")
    run = _cli("--suite", str(bad), "--engines", "native-fp32")
    assert run.returncode == 2 and "a raw prompt has a non-empty 'text'" in run.stderr


def test_candidates_or_a_recording_are_required():
    run = _cli("--suite", "ci")
    assert run.returncode == 2 and "give candidates with --engines" in run.stderr


def test_a_model_that_is_neither_gguf_nor_hf_folder_exits_2(tmp_path):
    run = _cli("--suite", "ci", "--engines", "native-fp32", "--model", str(tmp_path / "missing.gguf"))
    assert run.returncode == 2 and "no such GGUF file" in run.stderr
    run = _cli("--suite", "ci", "--engines", "native-fp32", "--model", str(tmp_path))
    assert run.returncode == 2 and "a folder must be a Hugging Face model folder (config.json" in run.stderr

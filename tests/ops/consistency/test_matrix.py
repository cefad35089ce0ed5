"""The matrix on the real default model: native fp32 agrees with transformers to rounding, int4
stays above its measured floor, a deliberately broken kernel fails the check, and the command
compares against a golden file without transformers, exiting non-zero on a violation."""

from __future__ import annotations

import json
import subprocess
import sys
import pytest

from mcp.backends.native import NativeBackend, native_options
from mcp.ops.consistency.golden import Golden, write_golden
from mcp.ops.consistency.runner import compare_candidate
from mcp.ops.consistency.tolerances import load_tolerances

pytestmark = pytest.mark.slow


def _compare(backend, consistency_ci, table=None):
    model, suite, inputs, records = consistency_ci
    backend.load()
    return compare_candidate(backend, "transformers", inputs, records, suite.top_logprobs, table or load_tolerances())


def _native(consistency_ci, precision):
    return NativeBackend(consistency_ci[0].sources.mcp, native_options(precision), name=f"native-{precision}")


def test_native_fp32_matches_transformers_to_rounding(consistency_ci):
    result = _compare(_native(consistency_ci, "fp32"), consistency_ci)
    summary = result.summary
    print(summary)
    assert result.passed and summary.num_positions > 50
    assert summary.top1_agreement == 1.0 and summary.token_match == 1.0 and summary.first_divergence is None
    assert summary.mse < 1e-8 and summary.kl < 1e-6


def test_native_int4_meets_its_floor(consistency_ci):
    result = _compare(_native(consistency_ci, "int4"), consistency_ci)
    print(result.summary)
    assert result.passed, result.checks


def test_a_flipped_rope_sign_fails_the_check(consistency_ci):
    backend = _native(consistency_ci, "fp32")
    backend.load()
    rotary = backend.engine.model.rotary
    # the bug: rotate the other way, every row filled first (rows are filled as positions are
    # reached: a row filled later would rotate the right way). A new tensor, not neg_().
    rotary.fill(rotary.max_positions)
    rotary.sin_signed = rotary.sin_signed.neg()
    result = _compare(backend, consistency_ci)
    failed = {check.bound for check in result.checks if check.passed is False}
    print(result.summary, failed)
    assert not result.passed
    assert {"min_top1_agreement", "max_mse", "max_kl"} <= failed


def _cli(*args):
    command = [sys.executable, "-m", "mcp.commands.cli", "check", "consistency", "--suite", "ci", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=900)


def _write_golden(path, consistency_ci, sha=None):
    model, suite, _, records = consistency_ci
    golden = Golden("transformers", {"transformers": "test"}, sha or model.sha256, model.name, suite.name,
                    suite.version, suite.sha256, suite.top_logprobs, records)
    write_golden(path, golden)


def test_the_command_gates_on_a_golden_file(consistency_ci, tmp_path):
    golden, report = tmp_path / "golden.json", tmp_path / "report.json"
    _write_golden(golden, consistency_ci)
    table = tmp_path / "tolerances.yaml"
    table.write_text("version: 1\nrules:\n"
                     "  - {reference: transformers, candidate: native-fp32, min_top1_agreement: 1.0,"
                     " max_topk_logprob_mae: 1.0e-4, min_token_match: 1.0}\n"
                     "  - {reference: transformers, candidate: native-int8, max_topk_logprob_mae: 1.0e-9}\n")
    run = _cli("--engines", "native-fp32,native-int8", "--golden", str(golden), "--tolerances", str(table),
               "--json", str(report))
    assert run.returncode == 1, run.stderr
    assert "tolerance violated: native-int8: max_topk_logprob_mae" in run.stderr
    data = json.loads(report.read_text())
    verdicts = {c["name"]: c["passed"] for c in data["candidates"]}
    assert verdicts == {"native-fp32": True, "native-int8": False} and data["reference"]["source"].startswith("golden")
    assert "| native-fp32 |" in run.stdout and "**FAILED**" in run.stdout


def test_a_golden_file_of_another_model_is_refused(consistency_ci, tmp_path):
    golden = tmp_path / "golden.json"
    _write_golden(golden, consistency_ci, sha="0" * 64)
    run = _cli("--engines", "native-fp32", "--golden", str(golden))
    assert run.returncode == 2
    assert f"recorded for model {consistency_ci[0].name} with sha256 {'0' * 64}" in run.stderr
    assert "record a new golden file with --record-golden" in run.stderr

"""``mcp2026 bench serve`` run as a user runs it: a subprocess, real files, a real model or server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


from loadgen_server import serving

CLI = str(Path(sys.executable).with_name("mcp2026"))
BOUNDED = ("--rate", "1", "--num-requests", "2")


def bench(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, "bench", "serve", *args], capture_output=True, text=True, timeout=timeout)


def test_help_lists_the_flags():
    top = subprocess.run([CLI, "--help"], capture_output=True, text=True, timeout=60).stdout
    assert "bench" in top
    out = bench("--help").stdout
    for flag in ("--model", "--url", "--model-name", "--scenario", "--rate", "--sweep", "--calibrate", "--burstiness",
                 "--duration", "--num-requests", "--class-mix", "--tenants", "--max-tokens", "--seed", "--policy",
                 "--json", "--plots", "--no-slo-options", "--slo"):
        assert flag in out, flag


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (BOUNDED, "give --model NAME_OR_PATH (in-process) or --url URL --model-name NAME (HTTP)"),
        (("--model", "m", "--rate", "1"), "give --num-requests N or --duration SECONDS (or both)"),
        (("--model", "m", "--num-requests", "2"), "give --rate REQUESTS_PER_S (or --sweep R1,R2,...)"),
        (("--model", "m", "--num-requests", "2", "--rate", "0"), "--rate: rates must be positive requests/s, got 0.0"),
        (("--model", "m", *BOUNDED, "--sweep", "1,2"), "give --rate or --sweep, not both"),
        (("--model", "m", "--num-requests", "2", "--sweep", "1,fast"), "--sweep: 'fast' is not a number of requests/s"),
        (("--model", "m", *BOUNDED, "--class-mix", "urgent=1"), "--class-mix: unknown name 'urgent'"),
        (("--model", "m", *BOUNDED, "--tenants", "a=x"), "--tenants: weight 'x' of 'a' is not a number"),
        (("--model", "m", *BOUNDED, "--burstiness", "0.5"), "--burstiness applies to the gamma and bursty-zipf"),
        (("--model", "m", *BOUNDED, "--max-tokens", "0"), "--max-tokens must be positive, got 0"),
        (("--model", "m", *BOUNDED, "--duration", "-3"), "--duration must be positive seconds, got -3.0"),
        (("--model", "m", *BOUNDED, "--slo", "critical=fast"), "--slo: critical='fast' is not TTFT/TPOT in seconds"),
        (("--model", "m", *BOUNDED, "--prompts", "/nonexistent/p.jsonl"), "--prompts /nonexistent/p.jsonl: cannot be read"),
        (("--model", "m", *BOUNDED, "--drain-timeout", "0"), "--drain-timeout must be positive seconds"),
        (("--url", "http://127.0.0.1:9", *BOUNDED), "--url needs --model-name NAME"),
        (("--url", "127.0.0.1:9", "--model-name", "m", *BOUNDED), "--url '127.0.0.1:9' must start with http:// or https://"),
        (("--url", "http://127.0.0.1:9", "--model-name", "m", "--policy", "fcfs", *BOUNDED),
         "--model, --policy and --config are for the in-process target"),
        (("--model", "/nonexistent/model.mcp", *BOUNDED), "model '/nonexistent/model.mcp' not found"),
    ],
)
def test_bad_flags_are_one_line_and_exit_2(args, message):
    proc = bench(*args)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("mcp2026: error: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert message in proc.stderr


def test_bad_prompts_file_names_its_line(tmp_path):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt": "hi"}\n\n{"text": "no prompt key"}\n', encoding="utf-8")
    proc = bench("--model", "m", *BOUNDED, "--prompts", str(prompts))
    assert proc.returncode == 2 and f'--prompts {prompts}:3: needs a non-empty string "prompt" field' in proc.stderr


def test_unknown_scenario_is_an_argparse_error():
    proc = bench("--model", "m", *BOUNDED, "--scenario", "steady")
    assert proc.returncode == 2 and "invalid choice: 'steady'" in proc.stderr


def test_a_server_that_answers_nothing_is_an_error_not_an_empty_report():
    proc = bench("--url", "http://127.0.0.1:9", "--model-name", "m", "--rate", "5", "--num-requests", "2")
    assert proc.returncode == 2
    assert "mcp2026: error: no request finished (2 sent); the first error: ConnectError" in proc.stderr


def test_in_process_sweep_writes_json_and_plots(tmp_path, smollm2_auto_mcp):
    proc = bench("--model", str(smollm2_auto_mcp), "--no-slo-options", "--scenario", "mixed", "--sweep", "2,4",
                 "--num-requests", "3", "--max-tokens", "8", "--seed", "3",
                 "--json", str(tmp_path / "bench.json"), "--plots", str(tmp_path / "plots"))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert sum(line.startswith("class ") for line in lines) == 2
    assert sum(line.startswith("all ") and " 3 " in line for line in lines) == 2
    sweep = lines[lines.index(next(line for line in lines if line.startswith("rate "))):][:3]
    assert [line.split()[0] for line in sweep] == ["rate", "2", "4"]
    report = json.loads((tmp_path / "bench.json").read_text(encoding="utf-8"))
    assert [run["rate"] for run in report["runs"]] == [2.0, 4.0]
    assert report["target"]["kind"] == "in-process" and report["target"]["send_slo_options"] is False
    assert report["workload"]["scenario"] == "mixed" and report["sweep"]["goal"] == 0.9
    assert all(r["status"] == "ok" and r["max_tokens"] in (2, 4, 8) for run in report["runs"] for r in run["requests"])
    assert report["command"].startswith("mcp2026 bench serve --model")
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == \
        ["attainment.png", "latency_cdf_rate2.png", "latency_cdf_rate4.png"]


@pytest.fixture(scope="module")
def server(smollm2_auto_mcp):
    with serving(smollm2_auto_mcp) as server:
        yield server


def test_http_run_with_calibration_and_class_headers(tmp_path, server):
    proc = bench("--url", server.url, "--model-name", "smollm2", "--calibrate", "--rate", "2",
                 "--num-requests", "3", "--max-tokens", "6", "--class-mix", "critical=1,low=1",
                 "--tenants", "acme", "--json", str(tmp_path / "bench.json"))
    assert proc.returncode == 0, proc.stderr
    assert "calibration: one request alone, 6 tokens" in proc.stdout
    report = json.loads((tmp_path / "bench.json").read_text(encoding="utf-8"))
    calibration = report["calibration"]
    assert calibration["decode_tokens_per_s"] > 0 and calibration["single_stream_rate"] == pytest.approx(1 / calibration["e2e_s"])
    (run,) = report["runs"]
    assert run["rate"] == pytest.approx(2 * calibration["single_stream_rate"])
    assert report["target"] == {"kind": "http", "url": f"{server.url}/v1/completions", "model": "smollm2",
                                "send_slo_options": True, "temperature": 0.0, "ignore_eos": True}
    calibration_sent, sent = server.seen[:3], server.seen[3:]  # a warm-up and two calibration requests first
    assert {(s["class"], s["tenant"]) for s in calibration_sent} == {("critical", "calibration")}
    assert sorted((s["class"], s["tenant"]) for s in sent) == sorted((r["slo_class"], "acme") for r in run["requests"])
    assert all(r["status"] == "ok" and r["output_tokens"] >= 1 for r in run["requests"])

"""benchmarks/serve.py on a tiny run: two systems side by side (our SDK in process, and an
OpenAI-compatible server on loopback standing in for llama-server), JSON, plots, and its own
RESULTS.md section written without touching the others.

``sdk`` runs on any build; ``slo`` and ``fcfs`` need the engine loop's ``scheduler.policy``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "serve.py"
sys.path.insert(0, str(SCRIPT.parent))
sys.path.insert(0, str(ROOT / "tests" / "ops" / "loadgen"))

from loadgen_server import serving  # noqa: E402
from servebench import results  # noqa: E402



@pytest.fixture(scope="module")
def server(smollm2_auto_mcp):
    with serving(smollm2_auto_mcp) as server:
        yield server


def test_two_systems_side_by_side_with_results_section(tmp_path, smollm2_auto_mcp, server):
    results_md = tmp_path / "RESULTS.md"
    results_md.write_text("# Benchmark results\n\n<!-- engine.py -->\nkept\n<!-- /engine.py -->\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--systems", "sdk,llamacpp", "--model", str(smollm2_auto_mcp),
         "--llama-url", server.url, "--rate", "4", "--json", str(tmp_path / "serve.json"),
         "--plots", str(tmp_path / "plots"), "--write-results", str(results_md)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split() == ["sdk", "llamacpp", "sdk/llamacpp"])
    rows = {line[:25].strip(): line[25:].split() for line in lines[header + 1:header + 20] if line.strip()}
    assert rows["attainment all %"][2].endswith("x") and rows["throughput req/s"][2].endswith("x")
    assert any(line.startswith("same workload for all: mixed, 8 requests at 4 req/s") for line in lines)
    data = json.loads((tmp_path / "serve.json").read_text(encoding="utf-8"))
    assert set(data["systems"]) == {"sdk", "llamacpp"}
    for report in data["systems"].values():
        (run,) = report["runs"]
        assert run["rate"] == 4.0 and len(run["requests"]) == 8
        assert all(r["status"] == "ok" for r in run["requests"]), [r["error"] for r in run["requests"]]
    assert [(s["class"], s["tenant"]) for s in server.seen] == [(None, None)] * 8  # llama.cpp gets no SLO headers
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == ["llamacpp", "sdk"]
    text = results_md.read_text(encoding="utf-8")
    assert "<!-- engine.py -->\nkept\n<!-- /engine.py -->" in text
    assert text.count(results.START) == 1 and text.rstrip().endswith(results.END)
    assert "benchmarks/serve.py --quick --systems sdk,llamacpp" in text


def test_results_section_is_replaced_in_place(tmp_path):
    path = tmp_path / "RESULTS.md"
    path.write_text("# R\n\nbefore\n\n<!-- serve.py -->\nold\n<!-- /serve.py -->\n\nafter\n", encoding="utf-8")
    results.write_section(path, "cmd", ["new table"], ["a note"])
    text = path.read_text(encoding="utf-8")
    assert "old" not in text and "new table" in text and "a note" in text
    assert text.index("before") < text.index(results.START) < text.index(results.END) < text.index("after")

"""benchmarks/engine.py: a quick run of our two engines prints every figure, and
``--write-results`` keeps the rest of RESULTS.md while replacing its own section."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "engine.py"
sys.path.insert(0, str(SCRIPT.parent))

from enginebench import report  # noqa: E402
from mcp.modelfile.reader import open_model  # noqa: E402
from mcp.modelfile.spec import SCALE_ZERO_SUFFIX  # noqa: E402

NUMBER = r"\d+(?:\.\d+)?"
CELL = re.compile(rf"^{NUMBER}(?: \[{NUMBER}-{NUMBER}\])?\*?$")  # "*": a fallback footnote
ROW_PREFIXES = (
    "prompt processing, 128 tok", "decode, batch 1, 32 tok", "aggregate decode, 8 seqs",
    "aggregate decode, 32 seqs", "TTFT, 37-token chat prompt", "load, cold", "load, warm",
    "peak RSS up to batch-1 runs", "peak RSS, whole run", "RSS before loading",
    "weights read per token", "batch-1 decode bound", "batch-1 decode / bound",
)


@pytest.mark.slow
def test_quick_run_of_ours_and_lean_prints_every_figure(tmp_path: Path, smollm2_auto_mcp: Path) -> None:
    raw = tmp_path / "samples.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--engines", "ours,lean", "--json", str(raw)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[1].startswith("command: ") and lines[1].endswith(f"engine.py --quick --engines ours,lean --json {raw}")
    assert report.ENGINES == ("ours", "lean", "llamacpp", "transformers")
    for prefix in ROW_PREFIXES:
        row = next((line for line in lines if line.startswith(prefix)), None)
        assert row is not None, f"no row {prefix!r} in:\n{done.stdout}"
        ours, lean, llama, hf = (_cell(row, i) for i in range(4))
        assert CELL.match(ours), f"ours has no number in {row!r}"
        assert CELL.match(lean) or (lean == "n/a" and prefix.startswith("aggregate")), f"lean: {row!r}"
        assert (llama, hf) == ("-", "-"), row  # engines left out
    target = next(line for line in lines if line.startswith("  target: 1.5 x .mcp file + KV"))
    assert float(_cell(target, 0)) > 1.5 * smollm2_auto_mcp.stat().st_size / 2**20
    assert "- ours, lean: no aggregate decode: it runs one sequence at a time" in lines
    # The targets block: without llama.cpp in the run the ratio targets have no peer; the
    # absolute ones are judged.
    block = lines[lines.index("issue 3's targets, this run (medians):") + 1:]
    assert [line.split("  ")[1] for line in block[:6]] == [
        "prompt processing >= 2.5x llama.cpp", "batch-1 decode >= 1.0x llama.cpp", "TTFT <= 0.5x llama.cpp's",
        "32 seqs aggregate >= 3x llama.cpp batch 1", "warm load <= 100 ms", "peak RSS, batch-1 runs <= target row"]
    assert "ours no llama.cpp figure" in block[0] and "ours, lean no llama.cpp figure" in block[0]
    assert "ours, lean n/a" in block[3]
    assert re.search(rf"ours {NUMBER} (met|MISSED) +ours, lean {NUMBER} (met|MISSED)$", block[4]), block[4]
    results = json.loads(raw.read_text())["results"]
    assert results["lean"]["info"]["weight_bytes"] == results["ours"]["info"]["weight_bytes"]
    ours = results["ours"]
    samples = ours["figures"]
    assert len(samples["pp_tps"]) == 2 and all(v > 0 for v in samples["pp_tps"])
    assert len(samples["load_cold_ms"]) == 2  # one fresh process per cold sample
    # The weights a decode reads: every tensor of the file but the scale/zero pairs kept for
    # PyTorch's int4 kernel, which the native kernels do not use; not the file's whole size.
    with open_model(smollm2_auto_mcp) as model:
        read = sum(model.tensor(spec.name).nbytes for spec in model.header.tensors
                   if not spec.name.endswith(SCALE_ZERO_SUFFIX))
    assert ours["info"]["weight_bytes"] == read


def test_targets_are_judged_against_llama_cpp_in_the_same_run() -> None:
    llama = {"pp_tps": [200.0, 210.0, 190.0], "decode1_tps": [100.0], "ttft_ms": [140.0], "decode_b32_tps": [220.0]}
    ours = {"pp_tps": [500.0, 520.0, 480.0], "decode1_tps": [99.0], "ttft_ms": [70.0], "decode_b32_tps": [301.0],
            "load_warm_ms": [100.5], "rss_peak_b1_mib": [180.0], "rss_target_mib": [183.5]}
    lean = {"pp_tps": [400.0], "decode1_tps": [101.0], "ttft_ms": [71.0], "load_warm_ms": [30.0],
            "rss_peak_b1_mib": [184.0], "rss_target_mib": [183.5]}
    lines = report.target_lines(report.issue_targets((8, 32)), {"ours": ours, "lean": lean, "llamacpp": llama})
    cells = [re.split(r" {2,}", line.strip())[1:] for line in lines[1:]]
    assert cells == [
        ["ours 2.50x met", "ours, lean 2.00x MISSED"],  # medians: 500 / 200, at the bound
        ["ours 0.99x MISSED", "ours, lean 1.01x met"],
        ["ours 0.50x met", "ours, lean 0.51x MISSED"],  # time: ours / llama.cpp's, at most 0.5
        ["ours 3.01x met", "ours, lean n/a"],  # against llama.cpp's batch-1 figure, not its batch of 32
        ["ours 100.5 MISSED", "ours, lean 30.0 met"],
        ["ours 180.0 met", "ours, lean 184.0 MISSED"],  # against each engine's own target row
    ]


def _cell(row: str, column: int) -> str:
    start = report.LABEL_WIDTH + column * report.CELL_WIDTH
    return row[start:start + report.CELL_WIDTH].strip()


def test_write_section_replaces_only_its_own_section(tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    results.write_text("# Benchmark results\n\nintro\n\n## Another benchmark\n\nits table\n")
    report.write_section(results, "python benchmarks/engine.py", ["first run"])
    report.write_section(results, "python benchmarks/engine.py --runs 7", ["second run", "line 2"])
    assert results.read_text() == (
        "# Benchmark results\n\nintro\n\n## Another benchmark\n\nits table\n\n"
        "<!-- engine.py -->\n"
        "## Side by side: ours, llama.cpp, transformers (benchmarks/engine.py)\n\n"
        "`python benchmarks/engine.py --runs 7`\n\n"
        "```\nsecond run\nline 2\n```\n"
        "<!-- /engine.py -->\n"
    )
    results.write_text(results.read_text() + "\n## Later section\n\nkept\n")
    report.write_section(results, "cmd", ["third"])
    text = results.read_text()
    assert text.count("<!-- engine.py -->") == 1 and "second run" not in text
    assert text.endswith("```\nthird\n```\n<!-- /engine.py -->\n\n## Later section\n\nkept\n")


@pytest.mark.slow
def test_interleaved_decode_runs_both_engines_in_turn() -> None:
    """benchmarks/decode_interleaved.py: two worker processes, one decode each per round."""
    pytest.importorskip("llama_cpp", reason="install llama-cpp-python (make test installs it: .ci/llama-cpp-wheel)")
    done = subprocess.run(
        [sys.executable, str(SCRIPT.parent / "decode_interleaved.py"), "--rounds", "2", "--tokens", "6"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("batch-1 decode, 6 tokens after 'The capital of France is', greedy, 2 threads, 2 rounds")
    for name in ("ours", "llamacpp"):
        assert re.match(rf"^  {name} +{NUMBER} tok/s  \[{NUMBER}-{NUMBER}\]$", lines[1 + (name != "ours")]), lines
    assert re.match(rf"^  ours / llama.cpp: median of the per-round ratios {NUMBER}x \[{NUMBER}-{NUMBER}\], "
                    r"ours faster in [0-2] of 2 rounds$", lines[3]), lines


def test_interleaved_decode_refuses_bad_options() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT.parent / "decode_interleaved.py"), "--tokens", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert "--tokens at least 2" in done.stderr

"""benchmarks/synthetic.py: the random-weight GGUFs it writes and quantizes, a one-round run of
both engines on a tiny shape (every row, both engines' numbers, the targets block), the
profile mode, and how its targets and rounds are judged and merged."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import gguf
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "synthetic.py"
sys.path.insert(0, str(SCRIPT.parent))

from enginebench import report, synthgguf, synthreport  # noqa: E402
from enginebench.turns import merge  # noqa: E402

NUMBER = r"\d+(?:\.\d+)?"
TINY = synthgguf.SHAPES["tiny"]
ROWS = ("decode, batch 1, 16 tok", "prompt processing, 1", "TTFT, 37-token chat prompt", "aggregate decode, 16 seqs",
        "load, warm", "load, cold", "peak RSS, batch-1 runs", "peak RSS, whole run", "weights held for decode",
        "bandwidth bound, batch 1", "batch-1 decode / bound")


@pytest.mark.slow  # reading SmolLM2's 49,152-token vocabulary with gguf.GGUFReader takes seconds each time
def test_the_f16_file_has_the_shape_and_smollm2s_tokenizer(tmp_path: Path, smollm2_gguf: Path) -> None:
    path = tmp_path / "tiny-f16.gguf"
    synthgguf.write_f16(TINY, smollm2_gguf, path)
    written, source = gguf.GGUFReader(path), gguf.GGUFReader(smollm2_gguf)
    tensors = {t.name: t for t in written.tensors}
    assert len(tensors) == 1 + 9 * TINY.layers + 1 and "output.weight" not in tensors  # tied embeddings
    assert tuple(tensors["token_embd.weight"].shape) == (256, 49152)  # GGUF order: columns first
    assert tuple(tensors["blk.1.attn_k.weight"].shape) == (256, 2 * 64)
    assert tuple(tensors["blk.0.ffn_down.weight"].shape) == (512, 256)
    assert tensors["blk.0.ffn_up.weight"].tensor_type == gguf.GGMLQuantizationType.F16
    assert tensors["output_norm.weight"].tensor_type == gguf.GGMLQuantizationType.F32
    assert float(np.asarray(tensors["output_norm.weight"].data).min()) == 1.0
    weights = np.asarray(tensors["blk.0.ffn_gate.weight"].data, dtype=np.float32)
    assert 0.019 < weights.std() < 0.021 and np.abs(weights).max() < 0.035  # uniform, std 0.02
    for key in ("tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.chat_template", "tokenizer.ggml.eos_token_id"):
        assert written.fields[key].contents() == source.fields[key].contents(), key
    assert len(written.fields["tokenizer.ggml.tokens"].data) == 49152
    assert written.fields["llama.attention.head_count_kv"].contents() == 2
    assert written.fields["llama.block_count"].contents() == 2


@pytest.mark.slow  # reading SmolLM2's 49,152-token vocabulary with gguf.GGUFReader takes seconds each time
def test_llama_cpps_quantizer_makes_each_file_type_once(tmp_path: Path, smollm2_gguf: Path) -> None:
    pytest.importorskip("llama_cpp", reason="install llama-cpp-python (make test installs it)")
    kinds, sizes = {}, {}
    for quant in synthgguf.QUANTS:
        path, how = synthgguf.quantized_file(TINY, quant, smollm2_gguf, tmp_path, threads=2)
        assert path == tmp_path / f"tiny-{quant}.gguf" and how.endswith("by llama.cpp in this run")
        tensors = gguf.GGUFReader(path).tensors
        kinds[quant] = {t.name: t.tensor_type.name for t in tensors}
        sizes[quant] = sum(int(t.n_bytes) for t in tensors)
    assert kinds["q4_0"]["blk.0.ffn_up.weight"] == "Q4_0"
    assert kinds["q8_0"]["blk.0.ffn_up.weight"] == "Q8_0"
    assert {"Q4_K", "Q6_K"} <= set(kinds["q4_k_m"].values())
    assert not (tmp_path / "tiny-f16.gguf").exists()  # every quant made: the F16 source is gone
    assert synthgguf.quantized_file(TINY, "q4_0", smollm2_gguf, tmp_path, threads=1)[1] == "cached"
    assert synthgguf.tensor_bytes(tmp_path / "tiny-q8_0.gguf") == sizes["q8_0"] > sizes["q4_k_m"] > sizes["q4_0"]


@pytest.mark.slow
def test_one_round_on_the_tiny_shape_prints_both_engines_figures(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="install llama-cpp-python (make test installs it)")
    raw = tmp_path / "samples.json"
    done = _run("--shapes", "tiny", "--quants", "q4_0", "--rounds", "1", "--quick", "--workdir", str(tmp_path),
                "--json", str(raw))
    lines = done.stdout.splitlines()
    assert lines[1].startswith("command: ") and "synthetic.py --shapes tiny" in lines[1]
    assert "one round: single samples, no ranges; on a shared machine these figures are noisy" in lines
    heading = lines.index("== tiny Llama (test shape), Q4_0 (random weights): tiny-q4_0.gguf")
    header = next(line for line in lines[heading:] if line.startswith("figure"))
    assert header.split() == ["figure", "ours", "llama.cpp", "ours", "vs", "llama.cpp"]
    for prefix in ROWS:
        row = next((line for line in lines[heading:] if line.startswith(prefix)), None)
        assert row is not None, f"no row {prefix!r} in:\n{done.stdout}"
        ours, llama = (_cell(row, i) for i in range(2))
        assert re.fullmatch(NUMBER, ours) and re.fullmatch(NUMBER, llama), row
        if prefix.startswith("bandwidth bound"):
            assert ours == llama  # one bound: the file's bytes
        elif prefix.startswith("batch-1 decode / bound"):
            assert float(ours) == pytest.approx(100 * float(_cell(_row(lines, "decode, batch 1"), 0)) / float(
                _cell(_row(lines, "bandwidth bound"), 0)), rel=0.02, abs=0.01)
        elif not prefix.startswith("weights"):
            assert re.search(rf" {NUMBER}x$", row), row  # the ratio column
    block = lines[lines.index("issue 30's targets, this file (medians):") + 1:]
    assert [re.split(r" {2,}", line.strip())[0] for line in block[:6]] == [
        "batch-1 decode >= 1.1x llama.cpp", "batch-1 decode >= 75% of the bound", "prompt processing >= 1.5x llama.cpp",
        "TTFT <= 0.7x llama.cpp's", "16 seqs aggregate >= 3x llama.cpp batch 1", "peak RSS (batch 1) <= llama.cpp's"]
    assert all(re.search(r"ours \S+ (met|MISSED)$", line) for line in block[:6]), block[:6]
    assert re.search(rf"^  tiny q4_0 +decode {NUMBER}x, pp {NUMBER}x, TTFT {NUMBER}x, 16 seqs {NUMBER}x, RSS {NUMBER}x$",
                     done.stdout, re.M), done.stdout
    saved = json.loads(raw.read_text())["files"]["tiny q4_0"]
    for engine in ("ours", "llamacpp"):
        figures = saved["results"][engine]["figures"]
        assert len(figures["decode1_tps"]) == 1 and figures["decode1_tps"][0] > 0
        assert saved["results"][engine]["info"]["pp_tokens"] == saved["results"]["ours"]["info"]["pp_tokens"]
    assert saved["gguf_tensor_bytes"] == synthgguf.tensor_bytes(tmp_path / "tiny-q4_0.gguf")


@pytest.mark.slow
def test_the_profile_mode_says_where_a_token_goes(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="install llama-cpp-python (make test installs it)")
    done = _run("--profile", "--shapes", "tiny", "--quants", "q8_0", "--quick", "--workdir", str(tmp_path))
    text = done.stdout
    assert re.search(rf"^== tiny Llama \(test shape\), Q8_0 \(random weights\): tiny-q8_0.gguf: {NUMBER} ms a token "
                     rf"\({NUMBER} tok/s\) over 15 tokens", text, re.M), text
    for part in ("whole step (execute)", "output head", "embedding", "loop (the rest)", "llama.cpp, whole token"):
        assert re.search(rf"^ +{re.escape(part)} +{NUMBER} ms", text, re.M), (part, text)


def test_bad_options_are_refused_with_the_reason() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--quants", "q4_k_s"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 2 and "unknown q4_k_s; choose from q4_0,q4_k_m,q8_0" in done.stderr
    done = subprocess.run([sys.executable, str(SCRIPT), "--engines", "ours"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 2 and "--engines must include llamacpp" in done.stderr


def test_issue_30_targets_are_judged_per_shape() -> None:
    llama = {"decode1_tps": [40.0], "pp_tps": [100.0], "ttft_ms": [200.0], "rss_peak_b1_mib": [1000.0]}
    ours = {"decode1_tps": [44.0], "bound_pct": [74.9], "pp_tps": [150.0], "ttft_ms": [141.0],
            "decode_b16_tps": [121.0], "rss_peak_b1_mib": [999.0]}
    lines = report.target_lines(synthreport.target_set("1b", 16, with_lean=False), {"ours": ours, "llamacpp": llama},
                                title="t")
    assert [re.split(r" {2,}", line.strip())[1] for line in lines[1:]] == [
        "ours 1.10x met", "ours 74.9 MISSED", "ours 1.50x met", "ours 0.70x MISSED",  # 141 / 200 = 0.705
        "ours 3.02x met", "ours 1.00x met"]  # 121 against llama.cpp's batch-1 40; RSS 999 / 1000
    assert [t.label for t in synthreport.target_set("3b", 16, False)] == [
        "batch-1 decode >= 1.1x llama.cpp", "peak RSS (batch 1) <= llama.cpp's"]
    assert [t.label for t in synthreport.target_set("default", 16, False)] == [
        "batch-1 decode >= 1.3x llama.cpp", "prompt processing >= 2.5x llama.cpp"]
    assert synthreport.target_set("1b", 16, with_lean=True)[-1].bound_figure == "rss_target_mib"


def test_rounds_append_samples_and_keep_notes_once() -> None:
    def round_result(value: float, note: str) -> dict:
        return {"figures": {"decode1_tps": [value], "decode_b16_tps": "n/a"}, "notes": [note],
                "info": {"pp_tokens": 500, "resident_after_drop": value / 100}, "methods": {}}

    total = merge(None, round_result(10.0, "a"))
    total = merge(total, round_result(12.0, "a"))
    total = merge(total, round_result(11.0, "b"))
    assert total["figures"] == {"decode1_tps": [10.0, 12.0, 11.0], "decode_b16_tps": "n/a"}
    assert total["notes"] == ["a", "b"] and total["info"]["resident_after_drop"] == [0.1, 0.12, 0.11]


def _run(*arguments: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, str(SCRIPT), *arguments], cwd=ROOT, capture_output=True, text=True,
                          timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _row(lines: list[str], prefix: str) -> str:
    return next(line for line in lines if line.startswith(prefix))


def _cell(row: str, column: int) -> str:
    start = report.LABEL_WIDTH + column * report.CELL_WIDTH
    return row[start:start + report.CELL_WIDTH].strip()

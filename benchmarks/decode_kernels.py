"""The native decode kernels alone: exact fp32 products against integer dots, on the real model.

For SmolLM2-135M-Instruct Q4_1 (compiled with the auto plan), times one call of each fused
matrix of layer 0 (q/k/v, o, gate/up, down: int4) and of the Q8_0 output head, for a few
activation rows and thread counts, and the sum a decode step makes (every layer + the head).
Prints the median milliseconds of each kernel with exact products, int8 dots (activations as one
int8 digit per block) and int8x2 dots (two digits, 15 bits), and the ratios exact / each (> 1:
the integer dots are faster). The three are timed in turn per call, so load from other
processes falls on all three alike. Numbers, not a pass/fail test.

    .venv/bin/python benchmarks/decode_kernels.py [--rows 1,4,16] [--threads 1,2] [--repeats 200]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch

from mcp.compiler import catalog
from mcp.compiler.compiler import compile_model
from mcp.engine import kernels
from mcp.engine.engine import EngineOptions, NativeEngine
from mcp.engine.kernels import QuantMatrix
from mcp.modelfile.reader import open_model


def load_matrices() -> tuple[dict[str, QuantMatrix], int]:
    """Layer 0's fused matrices and the head, and the number of layers."""
    folder = Path(tempfile.mkdtemp(prefix="decode-kernels-"))
    path = folder / "model.mcp"
    compile_model(catalog.fetch_source(catalog.DEFAULT_MODEL), path)
    with open_model(path) as model_file:
        engine = NativeEngine(model_file, EngineOptions(device="cpu"))
    model = engine.model
    layer = model.layers[0]
    matrices = {
        "qkv": layer.self_attn.qkv_proj.parts[0].matrix,
        "o": layer.self_attn.o_proj.matrix,
        "gate_up": layer.mlp.gate_up_proj.parts[0].matrix,
        "down": layer.mlp.down_proj.matrix,
        "head": model.lm_head.matrix,
    }
    return matrices, len(model.layers)


DIGITS = {"exact": 0, "int8": 1, "int8x2": 2}


def median_ms(matrix: QuantMatrix, x: torch.Tensor, repeats: int) -> dict[str, float]:
    """Median ms of one call per kind of dots, the kinds interleaved call by call."""
    for _ in range(5):
        for digits in DIGITS.values():
            matrix.matmul(x, x_digits=digits)
    times: dict[str, list[float]] = {name: [] for name in DIGITS}
    for _ in range(repeats):
        for name, digits in DIGITS.items():
            start = time.perf_counter()
            matrix.matmul(x, x_digits=digits)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) * 1e3 for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="1,4,16", help="activation rows per call, comma-separated")
    parser.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    parser.add_argument("--repeats", type=int, default=200, help="timed calls per figure (median)")
    args = parser.parse_args()
    matrices, num_layers = load_matrices()
    print(f"kernels: {kernels.isa()}; per step = {num_layers} x (qkv + o + gate_up + down) + head")
    print(f"{'threads':>7} {'rows':>4} {'matrix':<8} {'shape':>12} {'exact ms':>9} {'int8 ms':>8} {'ratio':>6} "
          f"{'int8x2 ms':>9} {'ratio':>6}")
    for threads in (int(t) for t in args.threads.split(",")):
        torch.set_num_threads(threads)
        for rows in (int(r) for r in args.rows.split(",")):
            totals = dict.fromkeys(DIGITS, 0.0)
            for name, matrix in matrices.items():
                x = torch.randn(rows, matrix.shape[1])
                ms = median_ms(matrix, x, args.repeats)
                weight = 1 if name == "head" else num_layers
                totals = {kind: totals[kind] + weight * ms[kind] for kind in DIGITS}
                print(_row(threads, rows, name, "x".join(map(str, matrix.shape)), ms))
            print(_row(threads, rows, "step", "", totals))


def _row(threads: int, rows: int, name: str, shape: str, ms: dict[str, float]) -> str:
    return (f"{threads:>7} {rows:>4} {name:<8} {shape:>12} {ms['exact']:>9.3f} {ms['int8']:>8.3f} "
            f"{ms['exact'] / ms['int8']:>5.2f}x {ms['int8x2']:>9.3f} {ms['exact'] / ms['int8x2']:>5.2f}x")


if __name__ == "__main__":
    main()

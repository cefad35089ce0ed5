"""The native decode kernels alone: exact fp32 products against int8 dots, on the real model.

For SmolLM2-135M-Instruct Q4_1 (compiled with the auto plan), times one call of each fused
matrix of layer 0 (q/k/v, o, gate/up, down: int4) and of the Q8_0 output head, for a few
activation rows and thread counts, and the sum a decode step makes (every layer + the head).
Prints the median milliseconds of each kernel and the ratio exact / int8 dots (> 1: the
int8 dots are faster). Numbers, not a pass/fail test; other processes on the machine skew them.

    .venv/bin/python benchmarks/decode_kernels.py [--rows 1,4,16] [--threads 1,2] [--repeats 200]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch

from mcp.engine import kernels
from mcp.engine.engine import EngineOptions, NativeEngine
from mcp.engine.kernels import QuantMatrix
from mcp.modelfile import catalog
from mcp.modelfile.compiler import compile_model
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


def median_ms(matrix: QuantMatrix, x: torch.Tensor, int8_dots: bool, repeats: int) -> float:
    for _ in range(5):
        matrix.matmul(x, int8_dots=int8_dots)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        matrix.matmul(x, int8_dots=int8_dots)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="1,4,16", help="activation rows per call, comma-separated")
    parser.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    parser.add_argument("--repeats", type=int, default=200, help="timed calls per figure (median)")
    args = parser.parse_args()
    matrices, num_layers = load_matrices()
    print(f"kernels: {kernels.isa()}; per step = {num_layers} x (qkv + o + gate_up + down) + head")
    print(f"{'threads':>7} {'rows':>4} {'matrix':<8} {'shape':>12} {'exact ms':>9} {'int8 ms':>8} {'ratio':>6}")
    for threads in (int(t) for t in args.threads.split(",")):
        torch.set_num_threads(threads)
        for rows in (int(r) for r in args.rows.split(",")):
            totals = [0.0, 0.0]
            for name, matrix in matrices.items():
                x = torch.randn(rows, matrix.shape[1])
                exact, dots = (median_ms(matrix, x, flag, args.repeats) for flag in (False, True))
                weight = 1 if name == "head" else num_layers
                totals = [totals[0] + weight * exact, totals[1] + weight * dots]
                shape = "x".join(map(str, matrix.shape))
                print(f"{threads:>7} {rows:>4} {name:<8} {shape:>12} {exact:>9.3f} {dots:>8.3f} {exact / dots:>5.2f}x")
            print(f"{threads:>7} {rows:>4} {'step':<8} {'':>12} {totals[0]:>9.2f} {totals[1]:>8.2f} "
                  f"{totals[0] / totals[1]:>5.2f}x")


if __name__ == "__main__":
    main()

"""The one-row product of each GGUF kind: exact dots on its blocks as stored against integer
dots (int8x2) on the same matrix re-laid 16 rows at a time (csrc/rows16.cpp).

A random 2048 x 8192 matrix of each kind (Q4_0, Q4_1, Q4_K, Q5_0, Q5_1, Q5_K, Q6_K, Q8_0: valid small scales,
random codes; speed does not depend on the values), one activation row, one thread. Prints
the GGUF's bytes over the median time of a product, on the AVX-512 and AVX2 builds where this
CPU has them (else the plain C++ one), and the ratio x16 / exact (> 1: the re-laid integer dots are faster). ``--cpu-time``
times with the process's CPU time instead of the wall clock, which a core shared with other
processes still measures fairly. Numbers, not a pass/fail test.

    .venv/bin/python benchmarks/x16_kernels.py [--rows 2048] [--cols 8192] [--repeats 40] [--cpu-time]
    .venv/bin/python benchmarks/x16_kernels.py --activations 16,37,64,256 --cpu-time

``--activations``: products of that many activation rows at once (16 sequences' decode step, a
37-token prompt, prefill chunks) instead: multiply-adds a second of the x16 int8x2 kernel
against what the prefill path runs above ``decode_max_rows`` rows (the matrix dequantized to
bf16, then torch's bf16 GEMM), on the best build, with the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from mcp.engine import kernels
from mcp.engine.kernels import BLOCK_KINDS, QuantMatrix

KINDS = ("q4_0", "q4_1", "q4_k", "q5_0", "q5_1", "q5_k", "q6_k", "q8_0")
# The fp16 fields of each block kind (byte offsets), set to a small finite scale.
HALVES = {"q4_0": (0,), "q4_1": (0, 2), "q4_k": (0, 2), "q5_0": (0,), "q5_1": (0, 2), "q5_k": (0, 2), "q6_k": (208,)}


def random_matrix(kind: str, n: int, k: int, rng: np.random.Generator) -> tuple[QuantMatrix, int]:
    """A matrix of ``kind`` and its bytes as the GGUF holds it."""
    if kind == "q8_0":  # the int8 kind with fp16 scales, as a Q8_0 file loads
        codes = torch.from_numpy(rng.integers(-127, 128, (n, k), dtype=np.int8))
        return QuantMatrix("int8", codes, torch.full((n, k // 32), 0.01, dtype=torch.float16)), n * k // 32 * 34
    weights, nbytes = BLOCK_KINDS[kind]
    blocks = rng.integers(0, 256, size=(n, k // weights, nbytes), dtype=np.uint8)
    half = np.frombuffer(np.float16(0.01).tobytes(), dtype=np.uint8)
    for offset in HALVES[kind]:
        blocks[:, :, offset:offset + 2] = half
    return QuantMatrix(kind, torch.from_numpy(blocks.reshape(n, -1)), None), blocks.nbytes


def gigabytes_per_second(matrix: QuantMatrix, nbytes: int, digits: int, repeats: int, clock) -> float:
    x = torch.randn(1, matrix.shape[1])
    for _ in range(3):
        matrix.matmul(x, x_digits=digits)
    times = []
    for _ in range(repeats):
        start = clock()
        matrix.matmul(x, x_digits=digits)
        times.append(clock() - start)
    return nbytes / statistics.median(times) / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2048)
    parser.add_argument("--cols", type=int, default=8192)
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--cpu-time", action="store_true", help="time with process CPU time (a shared machine)")
    parser.add_argument("--activations", help="comma-separated activation row counts: the many-row comparison")
    args = parser.parse_args()
    if args.rows % kernels.TILE_ROWS or args.cols % 256:
        parser.error(f"--rows must be a multiple of {kernels.TILE_ROWS} and --cols of 256")
    torch.set_num_threads(1)
    clock = time.process_time if args.cpu_time else time.perf_counter
    if args.activations:
        many_rows(args, [int(m) for m in args.activations.split(",")], clock)
        return
    best = kernels.isa()
    builds = [name for name in ("avx512", "avx2") if _supported(name)] or ["scalar"]
    print(f"{args.rows} x {args.cols}, one row, one thread, {'CPU' if args.cpu_time else 'wall'} time, "
          f"median of {args.repeats}; GGUF bytes / time")
    print(f"{'kind':6} {'build':7} {'exact GB/s':>10} {'x16 int8x2 GB/s':>16} {'x16 / exact':>12}")
    rng = np.random.default_rng(0)
    try:
        for kind in KINDS:
            matrix, nbytes = random_matrix(kind, args.rows, args.cols, rng)
            laid = matrix.interleaved()
            for build in builds:
                kernels.set_isa(build)
                exact = gigabytes_per_second(matrix, nbytes, 0, args.repeats, clock)
                fast = gigabytes_per_second(laid, nbytes, 2, args.repeats, clock)
                print(f"{kind:6} {build:7} {exact:10.1f} {fast:16.1f} {fast / exact:11.2f}x", flush=True)
    finally:
        kernels.set_isa(best)


def many_rows(args, counts: list[int], clock) -> None:
    print(f"{args.rows} x {args.cols}, M activation rows, one thread, {kernels.isa()} build, "
          f"{'CPU' if args.cpu_time else 'wall'} time, best of {args.repeats}; G multiply-adds / s")
    print(f"{'kind':6} {'M':>5} {'x16 int8x2':>11} {'bf16 dequant + GEMM':>20} {'x16 / bf16':>11}")
    rng = np.random.default_rng(0)
    for kind in KINDS:
        matrix, _ = random_matrix(kind, args.rows, args.cols, rng)
        laid = matrix.interleaved()
        dense = torch.empty(args.rows, args.cols, dtype=torch.bfloat16)
        for m in counts:
            x = torch.randn(m, args.cols)
            x16 = best_time(lambda: laid.matmul(x, x_digits=2), args.repeats, clock)
            xb = x.to(torch.bfloat16)
            bf16 = best_time(lambda: torch.mm(xb, matrix.dequantize_rows(0, args.rows, dense).t()), args.repeats, clock)
            macs = m * args.rows * args.cols / 1e9
            print(f"{kind:6} {m:5d} {macs / x16:11.1f} {macs / bf16:20.1f} {bf16 / x16:10.2f}x", flush=True)


def best_time(run, repeats: int, clock) -> float:
    run()
    times = []
    for _ in range(max(3, repeats // 8)):
        start = clock()
        run()
        times.append(clock() - start)
    return min(times)


def _supported(name: str) -> bool:
    best = kernels.isa()
    try:
        kernels.set_isa(name)
        return True
    except ValueError:
        return False
    finally:
        kernels.set_isa(best)


if __name__ == "__main__":
    main()

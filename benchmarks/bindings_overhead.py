"""What a call through the C API (libmcp) costs over the Python SDK.

Runs the same two measurements in Python (this process) and in C (benchmarks/bindings/bench.c,
compiled against build/libmcp), one after the other on the same cores: the median latency of a
1-token greedy call, and the median time per token of a streamed call; prints both and C/Python.

    make libmcp
    taskset -c 1 .venv/bin/python benchmarks/bindings_overhead.py [--model PATH] [--calls 20] [--tokens 32]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from mcp.compiler import catalog
from mcp.runtime import Session

ROOT = Path(__file__).resolve().parents[1]
LIBDIR = ROOT / "build" / "libmcp"


def python_numbers(model_path: str, calls: int, tokens: int) -> tuple[float, float]:
    one, per_token = [], []
    with Session() as session:
        model = session.load_model(model_path)
        for i in range(calls + 2):  # two warm-up calls
            start = time.perf_counter()
            model.infer("The capital of France is", max_tokens=1, temperature=0, raw=True)
            took = time.perf_counter() - start
            start = time.perf_counter()
            stream = model.stream("Once upon a time", max_tokens=tokens, temperature=0, raw=True)
            for _ in stream:
                pass
            streamed = (time.perf_counter() - start) / len(stream.result.token_ids)
            if i >= 2:
                one.append(took)
                per_token.append(streamed)
    return statistics.median(one) * 1e3, statistics.median(per_token) * 1e3


def c_numbers(model_path: str, calls: int, tokens: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        binary = Path(tmp) / "bench"
        subprocess.run(["cc", "-O2", f"-I{ROOT / 'include'}", str(ROOT / "benchmarks" / "bindings" / "bench.c"),
                        f"-L{LIBDIR}", "-lmcp", f"-Wl,-rpath,{LIBDIR}", "-o", str(binary)], check=True)
        out = subprocess.run([str(binary), model_path, str(calls), str(tokens)], check=True,
                             capture_output=True, text=True).stdout
    values = dict(line.split() for line in out.splitlines())
    return float(values["one_token_ms"]), float(values["stream_token_ms"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="a .mcp path (default: the catalog's default model)")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--tokens", type=int, default=32)
    args = parser.parse_args()
    model_path = args.model or str(catalog.pull(catalog.DEFAULT_MODEL))
    py_one, py_token = python_numbers(model_path, args.calls, args.tokens)
    c_one, c_token = c_numbers(model_path, args.calls, args.tokens)
    print(f"{'':24}{'Python SDK':>12}{'C (libmcp)':>12}{'C/Python':>10}")
    print(f"{'1-token call (ms)':24}{py_one:12.3f}{c_one:12.3f}{c_one / py_one:10.3f}")
    print(f"{'streamed token (ms)':24}{py_token:12.3f}{c_token:12.3f}{c_token / py_token:10.3f}")


if __name__ == "__main__":
    main()

"""What a call through the C API (libmcp) and the Go package costs over the Python SDK.

Runs the same two measurements in Python (this process), in C (benchmarks/bindings/bench.c,
compiled against build/libmcp) and in Go (the Go package's benchmarks, when Go is installed),
one after the other on the same cores: the latency of a 1-token greedy call, and the time per
token of a 32-token stream (medians in Python and C, means over `go test -bench` runs in Go);
prints them and their ratios to Python. A third row isolates the crossing itself: the median of
a call refused by the option check (temperature -1), the SDK's own work without the engine's.

    make libmcp
    taskset -c 1 .venv/bin/python benchmarks/bindings_overhead.py [--model PATH] [--calls 20] [--tokens 32]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from mcp.base.errors import InvalidRequestError
from mcp.compiler import catalog
from mcp.runtime import Session

ROOT = Path(__file__).resolve().parents[1]
LIBDIR = ROOT / "build" / "libmcp"


def refused_call_ms(model, runs: int = 2000) -> float:
    took = []
    for _ in range(runs):
        start = time.perf_counter()
        try:
            model.infer("The capital of France is", temperature=-1)
        except InvalidRequestError:
            took.append(time.perf_counter() - start)
    return statistics.median(took) * 1e3


def python_numbers(model_path: str, calls: int, tokens: int) -> tuple[float, float, float]:
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
        refused = refused_call_ms(model)
    return statistics.median(one) * 1e3, statistics.median(per_token) * 1e3, refused


def c_numbers(model_path: str, calls: int, tokens: int) -> tuple[float, float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        binary = Path(tmp) / "bench"
        subprocess.run(["cc", "-O2", f"-I{ROOT / 'include'}", str(ROOT / "benchmarks" / "bindings" / "bench.c"),
                        f"-L{LIBDIR}", "-lmcp", f"-Wl,-rpath,{LIBDIR}", "-o", str(binary)], check=True)
        out = subprocess.run([str(binary), model_path, str(calls), str(tokens)], check=True,
                             capture_output=True, text=True).stdout
    values = dict(line.split() for line in out.splitlines())
    return float(values["one_token_ms"]), float(values["stream_token_ms"]), float(values["refused_call_ms"])


def go_numbers(model_path: str, tokens: int) -> tuple[float, float] | None:
    """From `go test -bench` of bindings/go/mcp (its benchmarks stream 32 tokens)."""
    go = shutil.which("go")
    if go is None or tokens != 32:
        return None
    out = subprocess.run([go, "test", "-run", "^$", "-bench", ".", "-benchtime", "3s", "./bindings/go/mcp"], cwd=ROOT,
                         check=True, capture_output=True, text=True, env={**os.environ, "MCP_TEST_MODEL": model_path}).stdout
    one = float(re.search(r"BenchmarkInferOneToken\S*\s+\d+\s+([\d.]+) ns/op", out).group(1))
    per_token = float(re.search(r"BenchmarkStreamToken\S*.*?([\d.]+) ns/token", out).group(1))
    return one / 1e6, per_token / 1e6


def row(name: str, python: float, others: list[float | None]) -> str:
    cells = "".join(f"{value:12.4f}{value / python:8.3f}" if value is not None else f"{'-':>12}{'-':>8}"
                    for value in others)
    return f"{name:22}{python:12.4f}{cells}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="a .mcp path (default: the catalog's default model)")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--tokens", type=int, default=32)
    args = parser.parse_args()
    model_path = args.model or str(catalog.pull(catalog.DEFAULT_MODEL))
    py_one, py_token, py_refused = python_numbers(model_path, args.calls, args.tokens)
    c_one, c_token, c_refused = c_numbers(model_path, args.calls, args.tokens)
    go_one, go_token = go_numbers(model_path, args.tokens) or (None, None)
    print(f"{'':22}{'Python SDK':>12}{'C (libmcp)':>12}{'C/Py':>8}{'Go':>12}{'Go/Py':>8}")
    print(row("1-token call (ms)", py_one, [c_one, go_one]))
    print(row("streamed token (ms)", py_token, [c_token, go_token]))
    print(row("refused call (ms)", py_refused, [c_refused, None]))


if __name__ == "__main__":
    main()

"""Batch-1 decode, ours against llama.cpp, each in its own process, taking turns.

engine.py measures each engine in its own window of time. On a host whose speed drifts by
10-40% within minutes with nothing else running (seen on the 2-core EPYC machines here, see
RESULTS.md), the ratio of two windows mixes two speeds: two quick runs a minute apart gave
0.98x and 0.81x. This starts one worker process per engine (ours through the SDK, llama.cpp
0.3.36 through llama-cpp-python; the same model, prompt, greedy decoding and thread count as
engine.py), loads each model once, then asks the two in turn, in an order shuffled every
round, for one decode of N tokens each. A waiting worker blocks on its pipe and uses no CPU,
so each decode has the machine to itself, and neighbouring rounds see the same host speed.
Prints each engine's median tok/s with min/max, the median of the per-round ratios, and in
how many rounds ours was the faster. Numbers, not a test.

    .venv/bin/python benchmarks/decode_interleaved.py [--rounds 15] [--tokens 128] [--threads 2] [--context-words 0]
        [--kv-cache-dtype auto|fp32|f16] [--engines ours,lean,llamacpp]

``--kv-cache-dtype`` is our KV cache's (``scheduler.kv_cache_dtype``; the lean decoder's
``kv_cache_dtype``, where auto is f32); llama.cpp keeps its default, f16. ``lean`` is our lean
decoder (``mcp.engine.lean``, no torch in its process), a ratio to llama.cpp of its own.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from enginebench.spec import DECODE_PROMPTS, numbered_words  # noqa: E402

ENGINES = ("ours", "lean", "llamacpp")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--context-words", type=int, default=0,
                        help="decode after a raw prompt of this many words (a long context) instead of the short one")
    parser.add_argument("--kv-cache-dtype", choices=("auto", "fp32", "f16"), default="auto",
                        help="our KV cache's dtype (scheduler.kv_cache_dtype); llama.cpp's stays f16")
    parser.add_argument("--engines", default="ours,llamacpp",
                        help="comma-separated, llamacpp and at least one of ours, lean (default ours,llamacpp)")
    parser.add_argument("--worker", choices=ENGINES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rounds < 1 or args.tokens < 2 or args.threads < 1:
        parser.error("--rounds must be at least 1, --tokens at least 2, --threads at least 1")
    engines = tuple(name.strip() for name in args.engines.split(",") if name.strip())
    if set(engines) - set(ENGINES) or "llamacpp" not in engines or len(set(engines)) < 2:
        parser.error(f"--engines must name llamacpp and at least one of ours, lean; got {args.engines!r}")
    prompt = context_prompt(args.context_words)
    if args.worker:
        serve(args.worker, prompt, args.tokens, args.threads, args.kv_cache_dtype)
        return
    workers = {name: Worker(name, args) for name in engines}
    try:
        rates = {name: [] for name in engines}
        order = random.Random(0)
        for _ in range(args.rounds):
            for name in order.sample(engines, len(engines)):
                rates[name].append(workers[name].decode())
    finally:
        for worker in workers.values():
            worker.close()
    report(rates, args)


class Worker:
    """One engine in a subprocess: loaded and warmed up once, then one decode per request."""

    def __init__(self, name: str, args: argparse.Namespace) -> None:
        env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "TOKENIZERS_PARALLELISM": "false",
               "HF_HUB_OFFLINE": "1"}
        command = [sys.executable, __file__, "--worker", name, "--tokens", str(args.tokens), "--threads",
                   str(args.threads), "--context-words", str(args.context_words), "--kv-cache-dtype",
                   args.kv_cache_dtype]
        self.name = name
        self.process = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self._expect("ready")

    def decode(self) -> float:
        self.process.stdin.write("decode\n")
        self.process.stdin.flush()
        return float(self._expect("tps"))

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=60)

    def _expect(self, key: str) -> str:
        line = self.process.stdout.readline().strip()
        if not line.startswith(key):
            code = self.process.poll()
            raise RuntimeError(f"the {self.name} worker answered {line!r} instead of {key!r}"
                               + (f" and exited with {code}" if code is not None else "") + " (its stderr is above)")
        return line[len(key):].strip()


def context_prompt(words: int) -> str:
    """The prompt decoded after: the benchmark's short one, or ``words`` words of raw text."""
    return numbered_words(words) if words else DECODE_PROMPTS[0]


def serve(engine: str, prompt: str, tokens: int, threads: int, kv_cache_dtype: str) -> None:
    """The worker: load, warm up, then answer each ``decode`` line on stdin with ``tps <rate>``."""
    loaders = {"ours": lambda: _ours(prompt, tokens, threads, kv_cache_dtype),
               "lean": lambda: _lean(prompt, tokens, threads, kv_cache_dtype),
               "llamacpp": lambda: _llamacpp(prompt, tokens, threads)}
    decode = loaders[engine]()
    decode()  # warm-up
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() == "decode":
            print(f"tps {decode():.3f}", flush=True)


def _ours(prompt: str, tokens: int, threads: int, kv_cache_dtype: str):
    import torch

    from enginebench.ours import decode_tps
    from mcp.engine.loop_config import LoopConfig
    from mcp.compiler import catalog
    from mcp.runtime import RuntimeConfig, Session

    torch.set_num_threads(threads)
    config = RuntimeConfig(device="cpu", num_threads=threads, scheduler=LoopConfig(kv_cache_dtype=kv_cache_dtype))
    session = Session(config)
    model = session.load_model(catalog.DEFAULT_MODEL)
    return lambda: decode_tps(model, prompt, tokens)


def _lean(prompt: str, tokens: int, threads: int, kv_cache_dtype: str):
    from enginebench.ours import decode_tps
    from mcp.engine.lean import LeanModel
    from mcp.compiler import catalog

    model = LeanModel(catalog.compiled_path(catalog.DEFAULT_MODEL), num_threads=threads,
                      kv_cache_dtype="f16" if kv_cache_dtype == "f16" else "f32", prefix_caching=False)
    return lambda: decode_tps(model, prompt, tokens)


def _llamacpp(prompt: str, tokens: int, threads: int):
    import numpy

    from enginebench.llamacpp import decode_tps, load
    from mcp.compiler import catalog

    llm = load(str(catalog.fetch_source(catalog.DEFAULT_MODEL)), tokens + 64 + 5 * len(prompt.split()), threads)
    return lambda: decode_tps(llm, prompt, tokens, numpy)


def report(rates: dict[str, list[float]], args: argparse.Namespace) -> None:
    after = f"a {args.context_words}-word raw prompt" if args.context_words else repr(DECODE_PROMPTS[0])
    print(f"batch-1 decode, {args.tokens} tokens after {after}, greedy, {args.threads} threads, "
          f"{args.rounds} rounds, engines in turn (order shuffled per round); our KV cache {args.kv_cache_dtype}")
    for name, values in rates.items():
        print(f"  {name:<9} {statistics.median(values):7.1f} tok/s  [{min(values):.1f}-{max(values):.1f}]")
    for name in (name for name in rates if name != "llamacpp"):
        ratios = [mine / peer for mine, peer in zip(rates[name], rates["llamacpp"])]
        wins = sum(ratio > 1 for ratio in ratios)
        print(f"  {name} / llama.cpp: median of the per-round ratios {statistics.median(ratios):.2f}x "
              f"[{min(ratios):.2f}-{max(ratios):.2f}], {name} faster in {wins} of {len(ratios)} rounds")


if __name__ == "__main__":
    main()

"""Where a batch-1 decode step goes: the engine loop's step split into its parts.

Loads SmolLM2-135M-Instruct Q4_1 (auto plan) in a Session, runs a greedy 128-token ``infer``
with timers wrapped around the runner's parts (the native decode step's C++ call, the
output head, the embedding lookup, the whole ``ModelRunner.execute``), and prints the mean
milliseconds a decode token spends in each; "loop" is the rest of a token's time (scheduler,
sampler, detokenizer, queues). Numbers, not a test; other processes on the machine skew them.

    .venv/bin/python benchmarks/decode_profile.py [--threads 2] [--decode-dots int8|exact] [--torch-step]
"""

from __future__ import annotations

import argparse
import collections
import time

import torch

from mcp.compiler import catalog
from mcp.config.runtime import RuntimeConfig
from mcp.runtime.session import Session

PROMPT = "The capital of France is"


def timed(totals: dict, name: str, fn):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            totals[name] += time.perf_counter() - start
    return wrapper


def instrument(model, totals: dict) -> None:
    runner = model.loop.runner
    runner.execute = timed(totals, "execute", runner.execute)
    if runner.native_step is not None:
        runner.native_step = timed(totals, "native step (C++)", runner.native_step)
    engine_model = runner.model
    engine_model.compute_logits = timed(totals, "output head", engine_model.compute_logits)
    engine_model.embed_tokens.forward = timed(totals, "embedding", engine_model.embed_tokens.forward)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--decode-dots", default="auto", choices=("auto", "int8", "int8x2", "exact"))
    parser.add_argument("--torch-step", action="store_true", help="run decode steps on the torch modules")
    parser.add_argument("--tokens", type=int, default=128)
    args = parser.parse_args()
    config = RuntimeConfig(num_threads=args.threads, decode_dots=args.decode_dots, native_step=not args.torch_step)
    with Session(config) as session:
        model = session.load_model(catalog.DEFAULT_MODEL)
        per_token, inside, decode_tokens = profile_decode(model, PROMPT, args.tokens)
    print(f"{model.precision}; {args.threads} threads, torch {torch.__version__}")
    print(f"decode: {1 / per_token:.1f} tok/s, {per_token * 1e3:.2f} ms a token over {decode_tokens} tokens")
    for name, ms in inside.items():
        print(f"  {name:<20} {ms:7.2f} ms a step")
    print(f"  {'loop (the rest)':<20} {per_token * 1e3 - inside['execute']:7.2f} ms a token")


def profile_decode(model, prompt: str, tokens: int) -> tuple[float, dict[str, float], int]:
    """One greedy decode of ``tokens`` tokens after a warm-up, with the runner's parts timed:
    (seconds a decode token takes, mean ms a decode step in each part, decode tokens). Also used by
    ``synthetic.py --profile``."""
    model.infer(prompt, max_tokens=16, temperature=0, ignore_eos=True)  # warm up
    totals: dict[str, float] = collections.defaultdict(float)
    instrument(model, totals)
    # The prompt's step alone first: its parts are taken off the whole run's, so the means are of
    # decode steps only (a long prompt's step would otherwise outweigh a short decode's steps).
    model.infer(prompt, max_tokens=1, temperature=0, ignore_eos=True)
    prefill = dict(totals)
    totals.clear()
    result = model.infer(prompt, max_tokens=tokens, temperature=0, ignore_eos=True)
    timings = result.timings
    decode_tokens = result.usage.completion_tokens - 1
    per_token = (timings.total_s - timings.ttft_s) / decode_tokens
    parts = {name: max(total - prefill.get(name, 0.0), 0.0) / decode_tokens * 1e3 for name, total in totals.items()}
    return per_token, parts, decode_tokens


if __name__ == "__main__":
    main()

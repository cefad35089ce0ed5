"""The engine loop measured: decode speed against the contiguous-cache decoder
(``ContiguousDecoder``, engine/contiguous.py) on the same engine (batch 1 and 8, tokens per second),
and the time to first token of a request whose 200-token system prompt is already in the prefix
cache, against the same request without caching.

    python benchmarks/loop_bench.py MODEL.mcp [--precision auto] [--tokens 64] [--runs 3]

Each figure is the best of ``--runs`` runs, alternating the compared paths so that a noisy
machine penalizes both alike; the decode prompts are short, so decode dominates.
"""

from __future__ import annotations

import argparse
import time

from mcp.engine.contiguous import contiguous_decoder
from mcp.engine.engine import EngineOptions, NativeEngine
from mcp.engine.handle import RequestHandle
from mcp.engine.loop import EngineLoop
from mcp.engine.loop_config import LoopConfig
from mcp.engine.sampler import SamplingParams
from mcp.modelfile.reader import open_model

PROMPTS = ["The capital of France is", "Once upon a time", "def fibonacci(n):", "1, 2, 3,",
           "The best way to learn", "In 1969, the first", "Water boils at", "My favourite colour is"]


def generator_tps(engine: NativeEngine, prompts: list[list[int]], params: SamplingParams) -> float:
    started = time.perf_counter()
    num_tokens = sum(sum(o is not None for o in step) for step in contiguous_decoder(engine).generate_batch(prompts, params))
    return num_tokens / (time.perf_counter() - started)


def loop_tps(loop: EngineLoop, prompts: list[list[int]], params: SamplingParams) -> float:
    started = time.perf_counter()
    handles = [loop.submit(ids, params) for ids in prompts]
    num_tokens = sum(handle.wait().num_output_tokens for handle in handles)
    return num_tokens / (time.perf_counter() - started)


def ttft_s(handle: RequestHandle) -> float:
    outcome = handle.wait()
    return outcome.timings.ttft_s


def prefix_ttft(engine: NativeEngine, runs: int) -> tuple[float, float, int]:
    """Best TTFT (s) with and without prefix caching of a shared ~200-token system prompt."""
    system = ("You are the support assistant of a hardware shop. Answer in two sentences, name the "
              "product you mean, never invent prices, and say when you do not know. ") * 5 + "Be polite."
    template = engine.tokenizer.apply_chat_template
    prompts = [engine.tokenizer.encode(template([{"role": "system", "content": system},
                                                 {"role": "user", "content": f"Question {i}: is item {i} in stock?"}]),
                                       add_special_tokens=False) for i in range(runs + 1)]
    params = SamplingParams(max_tokens=1, temperature=0.0)
    best = {}
    for caching in (True, False):
        loop = EngineLoop(engine, LoopConfig(kv_cache_bytes=64 * 1024 * 1024, enable_prefix_caching=caching))
        try:
            loop.submit(prompts[0], params).wait()  # fills the cache (when on) and warms up
            best[caching] = min(ttft_s(loop.submit(ids, params)) for ids in prompts[1:])
        finally:
            loop.close()
    return best[True], best[False], len(prompts[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with open_model(args.model) as model_file:
        engine = NativeEngine(model_file, EngineOptions(device="cpu", precision=args.precision))
    loop = EngineLoop(engine, LoopConfig(kv_cache_bytes=64 * 1024 * 1024))
    params = SamplingParams(max_tokens=args.tokens, temperature=0.0, ignore_eos=True)
    print(f"model {args.model}, precision {engine.precision}, {args.tokens} tokens per sequence")
    try:
        for batch in (1, 8):
            prompts = [engine.tokenizer.encode(text) for text in PROMPTS[:batch]]
            loop_tps(loop, prompts, SamplingParams(max_tokens=2))  # warm-up both paths
            generator_tps(engine, prompts, SamplingParams(max_tokens=2))
            best = {"generator": 0.0, "loop": 0.0}
            for _ in range(args.runs):
                best["generator"] = max(best["generator"], generator_tps(engine, prompts, params))
                best["loop"] = max(best["loop"], loop_tps(loop, prompts, params))
            print(f"batch {batch}: generator {best['generator']:.1f} tok/s, loop {best['loop']:.1f} tok/s "
                  f"({best['loop'] / best['generator']:.2f}x)")
    finally:
        loop.close()
    cached, uncached, num_tokens = prefix_ttft(engine, args.runs)
    print(f"TTFT, {num_tokens}-token prompt sharing its system prompt: prefix cache {cached * 1000:.0f} ms, "
          f"none {uncached * 1000:.0f} ms ({cached / uncached:.2f}x)")


if __name__ == "__main__":
    main()

"""The KV cache a long context holds on a model with sliding-window layers (Gemma 3): bytes held
at the peak of one sequence through the engine loop, against what every layer keeping every
position would hold (the layout before kv/hybrid.py), as a ratio.

    python benchmarks/kv_window.py [--model gemma3-270m] [--tokens 8192] [--new 32] [--precision auto]

Counts the blocks each pool holds after every step (a hook on the loop's thread), so the figure
is what the block tables hold, not an estimate; also prints the peak resident memory of the
process and the tokens per second of the prefill and decode, for orientation (busy machines
make the times noisy; the block counts are exact).
"""

from __future__ import annotations

import argparse
import random
import resource
import time

from mcp.compiler import catalog
from mcp.engine.engine import EngineOptions, NativeEngine
from mcp.engine.kv.hybrid import HybridKVCacheManager
from mcp.engine.kv.paged import PagedKVStorage
from mcp.engine.loop import EngineLoop
from mcp.engine.loop_config import LoopConfig
from mcp.engine.models import sliding_window_layers
from mcp.engine.sampler import SamplingParams
from mcp.modelfile.reader import open_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="gemma3-270m", help="a catalog model (default gemma3-270m)")
    parser.add_argument("--tokens", type=int, default=8192, help="prompt tokens (default 8192)")
    parser.add_argument("--new", type=int, default=32, help="tokens generated after the prompt (default 32)")
    parser.add_argument("--precision", default="auto")
    args = parser.parse_args()
    with open_model(catalog.pull(args.model)) as model_file:
        engine = NativeEngine(model_file, EngineOptions(device="cpu", precision=args.precision))
    arch = engine.model.arch
    if args.tokens + args.new > engine.max_context:
        parser.error(f"{args.model} runs up to {engine.max_context} positions")
    loop = EngineLoop(engine, LoopConfig())
    if not isinstance(loop.kv, HybridKVCacheManager):
        parser.error(f"{args.model} has no sliding-window layers: every layer keeps every position")
    held: list[tuple[int, int]] = []
    loop.hooks.add("on_token_generated", lambda _: held.append((loop.kv.full.num_used_blocks,
                                                                loop.kv.local.num_used_blocks)))
    rng = random.Random(0)
    prompt = [rng.randrange(1000, engine.tokenizer.vocab_size) for _ in range(args.tokens)]
    started = time.perf_counter()
    handle = loop.submit(prompt, SamplingParams(max_tokens=args.new, temperature=0.0, ignore_eos=True))
    outcome = handle.wait()
    seconds = time.perf_counter() - started
    loop.close()
    _report(args, arch, loop, held, outcome, seconds)


def _report(args, arch, loop: EngineLoop, held, outcome, seconds: float) -> None:
    windowed = sliding_window_layers(arch)
    storage = loop.storage
    per_layer = PagedKVStorage.bytes_per_block(1, storage.block_size, arch.num_kv_heads, arch.head_dim, storage.dtype)
    num_local, num_global = sum(windowed), len(windowed) - sum(windowed)
    full_blocks, local_blocks = max(f for f, _ in held), max(loc for _, loc in held)
    ours = full_blocks * num_global * per_layer + local_blocks * num_local * per_layer
    every = -(-(args.tokens + args.new) // storage.block_size) * len(windowed) * per_layer
    print(f"model: {args.model}: {len(windowed)} layers, {num_local} with a {arch.sliding_window}-token window, "
          f"{num_global} global; KV {storage.dtype}, blocks of {storage.block_size}")
    print(f"context: {args.tokens} prompt + {args.new} new tokens, one sequence through the engine loop")
    size = storage.block_size
    print(f"most blocks held after a generated token: global pool {full_blocks} ({full_blocks * size} positions), "
          f"windowed pool {local_blocks} ({local_blocks * size} positions)")
    print(f"KV held then: ours {ours / 2**20:.1f} MiB; every layer every position {every / 2**20:.1f} MiB; "
          f"ratio {ours / every:.3f}")
    print(f"per token of context: ours {ours / (args.tokens + args.new):,.0f} B, "
          f"without the window's release {every / (args.tokens + args.new):,.0f} B")
    print(f"time: {seconds:.1f} s for the prefill and {outcome.num_output_tokens} tokens; "
          f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10:.0f} MiB")


if __name__ == "__main__":
    main()

"""Builds of the native kernels against each other, swapped in one process between requests.

A kernel change worth a few percent is lost in a drifting host's noise when two runs are
compared (see README.md, "Reading it: noise"). This loads each given build of
``mcp.engine.kernels._cpu`` (a copy of the extension file) into one process, loads the
default model once, and per round runs one request on each build in turn, in an order
shuffled every round: ``mcp.engine.kernels._cpu`` is swapped before each request, and every
kernel call goes through it. Prints each build's median per token (decode) or per request,
its ratio to the first build, and in how many paired rounds the second build beat the first.
An A/A run (one build against its own copy) measured 0.98-1.02x. Numbers, not a test.

    cp src/mcp/engine/kernels/_cpu.*.so /tmp/before.so      # then change the kernels, and
    .venv/bin/python setup.py -q build_ext --inplace --force && cp src/mcp/engine/kernels/_cpu.*.so /tmp/after.so
    .venv/bin/python benchmarks/kernels_ab.py /tmp/before.so /tmp/after.so [--mode decode|prefill|batch]
        [--rounds 15] [--tokens 48] [--prompt-words 60] [--context-words 0] [--batch 8] [--threads 2]
        [--isa avx2|scalar]

``--isa`` runs every build on a narrower instruction set than the CPU's best (the kernels'
``set_isa``): an AVX-512 host's estimate of an AVX2 change, not an AVX2 host's figure (the
cores, caches and memory are still this host's).
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from enginebench.spec import numbered_words  # noqa: E402
from mcp.compiler import catalog  # noqa: E402
from mcp.engine import kernels  # noqa: E402
from mcp.runtime import RuntimeConfig, Session  # noqa: E402

GREEDY = {"temperature": 0.0, "ignore_eos": True}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("builds", nargs="+", type=Path, help="copies of the built extension (_cpu.*.so)")
    parser.add_argument("--mode", choices=("decode", "prefill", "batch"), default="decode")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--tokens", type=int, default=48, help="decode: tokens per request")
    parser.add_argument("--prompt-words", type=int, default=60, help="prefill: words of raw prompt")
    parser.add_argument("--context-words", type=int, default=0,
                        help="decode: after a raw prompt of this many words (a long context), not the short one")
    parser.add_argument("--batch", type=int, default=8, help="batch: sequences, 16 tokens each")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--isa", choices=("avx512", "avx2", "scalar"),
                        help="run every build on this instruction set (default: the CPU's best)")
    args = parser.parse_args()
    missing = [str(path) for path in args.builds if not path.is_file()]
    if missing or len(args.builds) < 2:
        parser.error(f"give at least two built extension files; not found: {missing}")
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="kernels-ab-") as folder:
        builds = {f"{index}:{path.name}": _load_build(path, Path(folder) / f"{index}_{path.name}")
                  for index, path in enumerate(args.builds)}
        if args.isa and not all(module.set_isa(args.isa) for module in builds.values()):
            parser.error(f"this CPU cannot run the kernels' {args.isa} build")
        with Session(RuntimeConfig(device="cpu", num_threads=args.threads)) as session:
            model = session.load_model(catalog.DEFAULT_MODEL)
            measure = _measurement(model, args)
            samples = {name: [] for name in builds}
            for round_index in range(args.rounds + 1):  # round 0 warms every build up
                for name, module in random.Random(round_index).sample(list(builds.items()), len(builds)):
                    kernels._cpu = module
                    value = measure()
                    if round_index:
                        samples[name].append(value)
    _report(samples, args)


def _load_build(path: Path, copy: Path):
    """The extension in ``path`` as a module of its own (a copy, so that the loader maps it anew)."""
    shutil.copy(path, copy)
    spec = importlib.util.spec_from_file_location("mcp.engine.kernels._cpu", copy)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _measurement(model, args: argparse.Namespace):
    """A function that runs one request and returns its milliseconds (per token for decode)."""
    if args.mode == "decode":
        prompt = numbered_words(args.context_words) or "The capital of France is"

        def decode() -> float:
            out = model.infer(prompt, raw=True, max_tokens=args.tokens, **GREEDY)
            return (out.timings.total_s - out.timings.ttft_s) / (out.usage.completion_tokens - 1) * 1e3
        return decode
    if args.mode == "prefill":
        text = numbered_words(args.prompt_words)

        def prefill() -> float:
            started = time.perf_counter()
            model.infer(text, raw=True, max_tokens=1, **GREEDY)
            return (time.perf_counter() - started) * 1e3
        return prefill
    prompts = [f"Tell me about topic number {i}" for i in range(args.batch)]

    def batch() -> float:
        started = time.perf_counter()
        outputs = model.infer_batch(prompts, raw=True, max_tokens=16, **GREEDY)
        return (time.perf_counter() - started) * 1e3 / sum(out.usage.completion_tokens for out in outputs)
    return batch


def _report(samples: dict[str, list[float]], args: argparse.Namespace) -> None:
    unit = {"decode": "ms a token", "prefill": "ms a prefill", "batch": "ms a token (all sequences)"}[args.mode]
    print(f"mode {args.mode}, {args.rounds} rounds, {args.threads} threads, builds in turn (order shuffled per round)")
    first = None
    for name, values in samples.items():
        median = statistics.median(values)
        first = first or median
        print(f"  {name:<28} median {median:8.3f} {unit} [{min(values):.3f}-{max(values):.3f}]  "
              f"speed vs the first {first / median:.3f}x")
    names = list(samples)
    wins = sum(b < a for a, b in zip(samples[names[0]], samples[names[1]]))
    print(f"  {names[1]} faster than {names[0]} in {wins} of {args.rounds} paired rounds")


if __name__ == "__main__":
    main()

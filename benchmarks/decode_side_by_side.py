"""Batch-1 decode, ours against llama.cpp, interleaved round by round in one process.

On a machine that other processes share, load changes from minute to minute; engine.py runs
each engine in its own window, so its ratio can mix two loads. This runs one 128-token greedy
decode of each contender per round, in turn, for several rounds, and prints the median tok/s
of each and its ratio to llama.cpp's: ours with the native step and exact dots (the auto
plan), with int8 and int8x2 dots, and with the torch modules per step; llama.cpp 0.3.36 on the GGUF.
Numbers, not a test.

Compare our contenders with each other here; compare with llama.cpp through benchmarks/engine.py.
llama.cpp runs in this same process, where torch's OpenMP team also runs, and there it decodes
far slower than in a process of its own (measured 29 against 89 tok/s on a quiet 2-core Xeon,
2026-12-03), so the llama.cpp column understates the peer.

    .venv/bin/python benchmarks/decode_side_by_side.py [--rounds 5] [--threads 2] [--tokens 128]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy
import torch

from mcp.compiler import catalog
from mcp.config.runtime import RuntimeConfig
from mcp.runtime.session import Session

PROMPT = "The capital of France is"
OURS = {"ours, native step, exact dots": {"decode_dots": "exact"},
        "ours, native step, int8 dots": {"decode_dots": "int8"},
        "ours, native step, int8x2 dots": {"decode_dots": "int8x2"},
        "ours, torch step, exact dots": {"decode_dots": "exact", "native_step": False}}


def ours_decoder(session: Session, tokens: int):
    model = session.load_model(catalog.DEFAULT_MODEL)
    greedy = {"temperature": 0.0, "ignore_eos": True, "raw": True}
    model.infer(PROMPT, max_tokens=8, **greedy)  # warm up

    def decode() -> float:
        out = model.infer(PROMPT, max_tokens=tokens, **greedy)
        return (out.usage.completion_tokens - 1) / (out.timings.total_s - out.timings.ttft_s)
    return decode


def llamacpp_decoder(threads: int, tokens: int):
    from llama_cpp import Llama

    llm = Llama(model_path=str(catalog.fetch_source(catalog.DEFAULT_MODEL)), n_ctx=512, n_threads=threads,
                n_threads_batch=threads, verbose=False)
    vocab = llm.n_vocab()

    def argmax() -> int:
        return int(numpy.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(vocab,)).argmax())

    def decode() -> float:
        llm.reset()
        llm.eval(llm.tokenize(PROMPT.encode(), add_bos=False))
        token, started = argmax(), time.perf_counter()
        for _ in range(tokens - 1):
            llm.eval([token])
            token = argmax()
        return (tokens - 1) / (time.perf_counter() - started)
    return decode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=128)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sessions = {label: Session(RuntimeConfig(num_threads=args.threads, **options)) for label, options in OURS.items()}
    try:
        contenders = {label: ours_decoder(session, args.tokens) for label, session in sessions.items()}
        contenders["llama.cpp"] = llamacpp_decoder(args.threads, args.tokens)
        samples: dict[str, list[float]] = {label: [] for label in contenders}
        for _ in range(args.rounds):
            for label, decode in contenders.items():
                samples[label].append(decode())
    finally:
        for session in sessions.values():
            session.close()
    report(samples, args)


def report(samples: dict[str, list[float]], args) -> None:
    reference = statistics.median(samples["llama.cpp"])
    print(f"batch-1 decode, {args.tokens} tokens, {args.threads} threads, median [min-max] of {args.rounds} "
          f"interleaved rounds")
    for label, values in samples.items():
        median = statistics.median(values)
        print(f"  {label:<32} {median:6.1f} tok/s [{min(values):.1f}-{max(values):.1f}]  "
              f"{median / reference:.2f}x llama.cpp")
    print("  (llama.cpp shares this process's OpenMP threads with torch and runs slower than alone:\n"
          "   its ratios here are not a comparison; benchmarks/engine.py runs each engine in its own process)")


if __name__ == "__main__":
    main()

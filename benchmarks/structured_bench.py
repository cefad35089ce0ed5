"""Constrained decoding measured: the engine loop's cost per generated token with a grammar
masking every step against the same run without one, at 1 and 16 concurrent sequences.

    python benchmarks/structured_bench.py [MODEL.mcp] [--precision auto] [--tokens 64] [--runs 3]

The constrained sequences follow a JSON grammar that never completes (an open array of
objects, each valid against a schema), so that both runs generate exactly ``--tokens`` tokens a
sequence (the free run ignores EOS): what differs is the mask (llguidance computing the allowed
tokens, applied to the logits row) and the grammar consuming each token. Each figure is the
best of ``--runs`` runs, alternating the two, so a noisy machine penalizes both alike. The
prompts are short: decode dominates. Prints ms per token and the ratio constrained/free, and,
since a shared machine's noise can exceed the difference, the grammar's own work per token
(mask + consume, replayed alone over a constrained answer) and its share of a free token.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from mcp.engine.engine import EngineOptions, NativeEngine
from mcp.engine.grammar import GrammarState, ResponseFormat
from mcp.engine.loop import EngineLoop
from mcp.engine.loop_config import LoopConfig
from mcp.engine.sampler import SamplingParams
from mcp.modelfile.reader import open_model

DEFAULT_MODEL = Path.home() / ".cache/mcp2026/models/smollm2-135m-instruct.mcp"
ITEM = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                         "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["name", "age", "tags"], "additionalProperties": False}
# An array that never closes: every sequence runs its whole budget under the JSON mask.
ENDLESS_JSON = f'start: "[" item (", " item)*\nitem: %json {json.dumps(ITEM)}'


def ms_per_token(loop: EngineLoop, prompts: list[list[int]], params: SamplingParams) -> float:
    started = time.perf_counter()
    handles = [loop.submit(ids, params) for ids in prompts]
    num_tokens = sum(handle.wait().num_output_tokens for handle in handles)
    return 1000 * (time.perf_counter() - started) / num_tokens


def grammar_ms_per_token(engine: NativeEngine, loop: EngineLoop, prompt: list[int], tokens: int) -> float:
    """The grammar's own work per token (mask a logits row, consume the token), replayed alone
    over one constrained answer: the part of the overhead that machine noise cannot blur."""
    fmt = ResponseFormat("grammar", pattern=ENDLESS_JSON)
    handle = loop.submit(prompt, SamplingParams(max_tokens=tokens, temperature=0.0, response_format=fmt))
    handle.wait()
    token_ids = [step.token_id for step in handle.outputs]
    state, row = GrammarState(fmt, engine.tokenizer), torch.zeros(engine.model.arch.vocab_size)
    started = time.perf_counter()
    for token_id in token_ids:
        state.mask(row)
        state.consume(token_id)
    return 1000 * (time.perf_counter() - started) / len(token_ids)


def measure(loop: EngineLoop, prompts: list[list[int]], tokens: int, runs: int) -> tuple[float, float]:
    free = SamplingParams(max_tokens=tokens, temperature=0.0, ignore_eos=True)
    constrained = SamplingParams(max_tokens=tokens, temperature=0.0,
                                 response_format=ResponseFormat("grammar", pattern=ENDLESS_JSON))
    ms_per_token(loop, prompts, constrained)  # warm: llguidance's tokenizer is built once
    best_free = best_constrained = float("inf")
    for _ in range(runs):
        best_free = min(best_free, ms_per_token(loop, prompts, free))
        best_constrained = min(best_constrained, ms_per_token(loop, prompts, constrained))
    return best_free, best_constrained


def _chat_ids(engine: NativeEngine, text: str) -> list[int]:
    rendered = engine.tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True)
    return engine.tokenizer.encode(rendered, add_special_tokens=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default=str(DEFAULT_MODEL))
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with open_model(args.model) as model_file:
        engine = NativeEngine(model_file, EngineOptions(device="cpu", precision=args.precision))
    loop = EngineLoop(engine, LoopConfig())
    try:
        print(f"{'sequences':>9} {'free ms/tok':>12} {'constrained ms/tok':>19} {'ratio':>6} "
              f"{'grammar ms/tok':>15} {'grammar/free':>12}")
        for num_sequences in (1, 16):
            prompts = [_chat_ids(engine, f"List {i + 2} people as JSON.") for i in range(num_sequences)]
            free, constrained = measure(loop, prompts, args.tokens, args.runs)
            grammar = grammar_ms_per_token(engine, loop, prompts[0], args.tokens)
            print(f"{num_sequences:>9} {free:>12.2f} {constrained:>19.2f} {constrained / free:>6.3f} "
                  f"{grammar:>15.3f} {grammar / free:>12.3f}")
    finally:
        loop.close()


if __name__ == "__main__":
    main()

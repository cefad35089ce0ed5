"""Agreement and speed of the native engine against Hugging Face transformers, one run.

Both load SmolLM2-135M-Instruct Q4_1 (transformers dequantizes the GGUF to fp32; we run the
.mcp compiled from it, fp32 compute). For each prompt: last-position logits MSE and max
|diff|, top-1 agreement over every prompt position (teacher forced), greedy continuation
match; then greedy decode speed of both, as a ratio.

    .venv/bin/python benchmarks/oracle_vs_transformers.py [--tokens 64] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from mcp.compiler import catalog  # noqa: E402
from mcp.compiler.compiler import compile_model  # noqa: E402
from mcp.engine.contiguous import contiguous_decoder  # noqa: E402
from mcp.engine.engine import EngineOptions, NativeEngine  # noqa: E402
from mcp.engine.sampler import SamplingParams  # noqa: E402
from mcp.modelfile.reader import open_model  # noqa: E402

PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n    ",
    "Once upon a time, in a small village,",
    "量子纠缠是",
    [{"role": "user", "content": "What is the boiling point of water?"}],
    [{"role": "system", "content": "You answer in one sentence."},
     {"role": "user", "content": "Why is the sky blue?"}],
    [{"role": "user", "content": "Write a haiku about autumn."}],
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=64, help="greedy tokens per prompt")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    gguf = catalog.fetch_source(catalog.DEFAULT_MODEL)
    ours, load_ours = _load_ours(gguf)
    hf_model, hf_tokenizer, load_hf = _load_hf(gguf)
    print(f"load: ours {load_ours:.2f} s (compiled .mcp), transformers {load_hf:.2f} s (GGUF), "
          f"ratio transformers/ours {load_hf / load_ours:.1f}x")
    print(f"{'prompt':>6} {'tokens':>6} {'logits MSE':>11} {'max|diff|':>10} {'top-1 agree':>11} {'greedy match':>12}")
    for i, prompt in enumerate(PROMPTS):
        ids = _ids(hf_tokenizer, prompt)
        _agreement_row(i, ids, ours, hf_model, args.tokens)
    _speed(ours, hf_model, _ids(hf_tokenizer, PROMPTS[4]), args.tokens)


def _load_ours(gguf: Path) -> tuple[NativeEngine, float]:
    out = Path(tempfile.mkdtemp()) / "smollm2.mcp"
    compile_model(gguf, out)
    started = time.perf_counter()
    with open_model(out) as model_file:
        engine = NativeEngine(model_file, EngineOptions(device="cpu", precision="fp32"))
    return engine, time.perf_counter() - started


def _load_hf(gguf: Path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    started = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    return model.eval(), tokenizer, time.perf_counter() - started


def _ids(tokenizer, prompt) -> list[int]:
    if isinstance(prompt, list):
        prompt = tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
    return tokenizer(prompt, add_special_tokens=False).input_ids


def _agreement_row(index: int, ids: list[int], ours: NativeEngine, hf_model, num_tokens: int) -> None:
    greedy = [s.token_id for s in contiguous_decoder(ours).generate(ids, SamplingParams(max_tokens=num_tokens, temperature=0.0, ignore_eos=True))]
    sequence = ids + greedy
    with torch.inference_mode():
        theirs = hf_model(torch.tensor([sequence]), use_cache=False).logits[0].float()
    mine = contiguous_decoder(ours).score(sequence)
    diff = mine[len(ids) - 1] - theirs[len(ids) - 1]
    top1 = (mine.argmax(-1) == theirs.argmax(-1)).float().mean().item()
    # Teacher-forced greedy match: does transformers pick our token at every generated position?
    match = (theirs[len(ids) - 1:-1].argmax(-1) == torch.tensor(greedy)).float().mean().item()
    print(f"{index:>6} {len(ids):>6} {diff.pow(2).mean().item():>11.3e} {diff.abs().max().item():>10.2e} "
          f"{top1:>11.2%} {match:>12.2%}")


def _speed(ours: NativeEngine, hf_model, ids: list[int], num_tokens: int) -> None:
    params = SamplingParams(max_tokens=num_tokens, temperature=0.0, ignore_eos=True)
    list(contiguous_decoder(ours).generate(ids, SamplingParams(max_tokens=4, temperature=0.0)))  # warm-up
    started = time.perf_counter()
    steps = list(contiguous_decoder(ours).generate(ids, params))
    ours_s = time.perf_counter() - started
    config = hf_model.generation_config
    with torch.inference_mode():
        hf_model.generate(torch.tensor([ids]), max_new_tokens=4, do_sample=False)  # warm-up
        started = time.perf_counter()
        out = hf_model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                max_new_tokens=num_tokens, min_new_tokens=num_tokens, do_sample=False,
                                pad_token_id=config.pad_token_id)
        hf_s = time.perf_counter() - started
    hf_tokens = out.shape[1] - len(ids)
    ours_tps, hf_tps = len(steps) / ours_s, hf_tokens / hf_s
    print(f"greedy generation, prompt {len(ids)} tokens + {num_tokens} new, {torch.get_num_threads()} threads, fp32:")
    print(f"  ours {ours_tps:.1f} tok/s, transformers {hf_tps:.1f} tok/s, ratio ours/transformers {ours_tps / hf_tps:.2f}x")


if __name__ == "__main__":
    main()

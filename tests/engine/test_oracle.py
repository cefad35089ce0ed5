"""Correctness against an oracle nobody here wrote: Hugging Face transformers on the same GGUF.

transformers dequantizes the GGUF to fp32 and runs its own Llama; our engine runs the
.mcp compiled from the same file with fp32 compute. Logits must agree to MSE < 1e-4 and
greedy continuations token for token.
"""

from __future__ import annotations


import pytest
import torch

from mcp.engine.contiguous import contiguous_decoder
from mcp.engine.engine import EngineOptions, NativeEngine
from mcp.engine.sampler import SamplingParams
from mcp.modelfile.reader import open_model

pytestmark = pytest.mark.slow

RAW_PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n    ",
    "Once upon a time, in a small village,",
    "量子纠缠是",
    "1, 1, 2, 3, 5, 8,",
]
CHAT_MESSAGES = [
    [{"role": "user", "content": "What is the boiling point of water?"}],
    [{"role": "system", "content": "You answer in one sentence."},
     {"role": "user", "content": "Why is the sky blue?"}],
    [{"role": "user", "content": "Write a haiku about autumn."}],
    [{"role": "user", "content": "Translate 'good morning' into French."}],
    [{"role": "user", "content": "List three prime numbers."}],
]


@pytest.fixture(scope="module")
def engine(smollm2_mcp) -> NativeEngine:
    with open_model(smollm2_mcp) as model_file:
        return NativeEngine(model_file, EngineOptions(device="cpu", precision="fp32"))


def _prompt_ids(hf_tokenizer, prompt) -> list[int]:
    if isinstance(prompt, str):
        return hf_tokenizer(prompt, add_special_tokens=False).input_ids
    text = hf_tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
    return hf_tokenizer(text, add_special_tokens=False).input_ids


ALL_PROMPTS = RAW_PROMPTS + CHAT_MESSAGES

@pytest.mark.parametrize("prompt", ALL_PROMPTS, ids=[f"p{i}" for i in range(len(ALL_PROMPTS))])
def test_last_position_logits_match_transformers(engine, hf_smollm2, prompt):
    hf_model, hf_tokenizer = hf_smollm2
    ids = _prompt_ids(hf_tokenizer, prompt)
    assert engine.tokenizer.encode(hf_tokenizer.decode(ids), add_special_tokens=False) == ids
    ours = contiguous_decoder(engine).score(ids)[-1]
    with torch.inference_mode():
        theirs = hf_model(torch.tensor([ids])).logits[0, -1].float()
    mse = torch.mean((ours - theirs) ** 2).item()
    print(f"logits MSE {mse:.3e} over {ours.numel()} logits, prompt of {len(ids)} tokens")
    assert mse < 1e-4
    assert int(ours.argmax()) == int(theirs.argmax())


@pytest.mark.parametrize("prompt", ALL_PROMPTS, ids=[f"p{i}" for i in range(len(ALL_PROMPTS))])
def test_greedy_continuation_matches_transformers(engine, hf_smollm2, hf_greedy, prompt):
    hf_model, hf_tokenizer = hf_smollm2
    ids = _prompt_ids(hf_tokenizer, prompt)
    params = SamplingParams(max_tokens=32, temperature=0.0, ignore_eos=True)
    ours = [step.token_id for step in contiguous_decoder(engine).generate(ids, params)]
    theirs = hf_greedy(hf_model, ids, 32)
    assert len(ours) == 32
    assert ours == theirs, f"first divergence at {next(i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b)}"

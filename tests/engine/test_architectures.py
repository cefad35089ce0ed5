"""Every Llama-family variant against transformers: tiny random models, compiled from HF folders.

Each case builds a small random model with transformers, saves it as a Hugging Face folder
(safetensors + the SmolLM2 tokenizer), compiles it with `compile_model`, and checks that our
engine's logits and greedy tokens equal transformers' own forward pass in fp32.
"""

from __future__ import annotations

import pytest
import torch

from mcp.compiler.compiler import compile_model
from mcp.engine.contiguous import contiguous_decoder
from mcp.engine.engine import EngineOptions, NativeEngine
from mcp.engine.sampler import SamplingParams
from mcp.modelfile.reader import open_model

TINY = dict(vocab_size=49152, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
            rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2)


def _llama(**extra):
    from transformers import LlamaConfig, LlamaForCausalLM

    return LlamaForCausalLM(LlamaConfig(**TINY, **extra))


def _qwen2(**extra):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    return Qwen2ForCausalLM(Qwen2Config(**TINY, use_sliding_window=False, **extra))


def _mistral(**extra):
    from transformers import MistralConfig, MistralForCausalLM

    return MistralForCausalLM(MistralConfig(**TINY, sliding_window=None, **extra))


CASES = {
    "llama-untied": lambda: _llama(tie_word_embeddings=False, rope_theta=10000.0),
    "llama-tied": lambda: _llama(tie_word_embeddings=True, rope_theta=100000.0),
    "llama3-rope-scaling": lambda: _llama(
        tie_word_embeddings=False, rope_theta=500000.0,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 64}),
    "llama-linear-rope-scaling": lambda: _llama(
        tie_word_embeddings=False, rope_scaling={"rope_type": "linear", "factor": 2.0}),
    "llama-head-dim-override": lambda: _llama(tie_word_embeddings=False, head_dim=32),
    "qwen2-qkv-bias": lambda: _qwen2(tie_word_embeddings=True),
    "mistral": lambda: _mistral(tie_word_embeddings=False),
}


@pytest.fixture(scope="module")
def tokenizer_files(smollm2_gguf, tmp_path_factory):
    from transformers import AutoTokenizer

    folder = tmp_path_factory.mktemp("tokenizer")
    AutoTokenizer.from_pretrained(str(smollm2_gguf.parent), gguf_file=smollm2_gguf.name).save_pretrained(folder)
    return folder


@pytest.mark.parametrize("case", sorted(CASES))
def test_variant_matches_transformers(case, tokenizer_files, hf_greedy, tmp_path):
    import shutil

    torch.manual_seed(0)
    hf_model = CASES[case]().eval()
    with torch.no_grad():  # random init leaves norms at 1 and biases at 0: perturb them too
        for name, param in hf_model.named_parameters():
            if "norm" in name or name.endswith("bias"):
                param.add_(torch.randn_like(param) * 0.1)
    folder = tmp_path / case
    hf_model.save_pretrained(folder, safe_serialization=True)
    for item in tokenizer_files.iterdir():
        shutil.copy(item, folder / item.name)
    compile_model(folder, tmp_path / f"{case}.mcp", precision="source")  # the HF fp32 tensors as they are
    with open_model(tmp_path / f"{case}.mcp", verify=True) as model_file:
        engine = NativeEngine(model_file, EngineOptions(device="cpu", precision="fp32"))

    ids = [504, 3575, 282, 4649, 314, 28, 1073, 253, 1345, 30, 76, 355] * 6  # 72 tokens, past 64
    with torch.inference_mode():
        theirs = hf_model(torch.tensor([ids])).logits[0].float()
    ours = contiguous_decoder(engine).score(ids)
    assert torch.mean((ours - theirs) ** 2).item() < 1e-10

    params = SamplingParams(max_tokens=16, temperature=0.0, ignore_eos=True)
    generated = [step.token_id for step in contiguous_decoder(engine).generate(ids[:8], params)]
    assert generated == hf_greedy(hf_model, ids[:8], 16)

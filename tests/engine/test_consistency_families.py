"""``mcp2026 check consistency`` on the decoder families added after Llama, each a tiny random
model carrying SmolLM2's tokenizer (so that the ci suite's chat prompts are real text): the native
engine in fp32 against transformers in fp32 from the same source, through the real command.
Gemma 3 runs it as a catalog model (docs/consistency.md).

From GGUF, where transformers' GGUF reader keeps what the file says: Qwen3, Qwen3-MoE, and Phi-3
in Phi-3-mini-4k's shape (fused attn_qkv and ffn_up, full rotary, plain RoPE, no window). head_dim
128 and an expert size of 768 are the Qwen configs' defaults: that reader takes those from its
config defaults, not from the file's ``key_length`` and ``expert_feed_forward_length``, so other
sizes would not load there.

From a Hugging Face folder, where that reader drops what the model is about: Phi-3 with partial
rotary, LongRoPE and a window (the reader ignores ``phi3.rope.dimension_count``, the LongRoPE
factors and ``phi3.attention.sliding_window``), and Mistral with its window (llama.cpp writes it as
``llama``; the reader loads that as Llama without a window, or, for a file named exactly
"mistral", as Mistral with the config's default window of 4096). The window is 6 and the
original context 4: the ci suite's shortest sequence (5 prompt tokens and 8 more) runs past both,
so every forward runs on the long factors, in transformers as in the engine.
"""

from __future__ import annotations

import os
import subprocess
import sys

import gguf
import pytest
import torch
from decoder_models import tiny_mistral, tiny_phi3, write_phi3_gguf
from families import IDS, save_folder, tokenizer_files
from qwen3_models import TINY, perturbed, write_gguf

pytestmark = pytest.mark.slow

__all__ = ["tokenizer_files"]  # a fixture

WINDOW, ORIGINAL = 6, 4


def _tiny_qwen3(arch: str):
    from transformers import Qwen3Config, Qwen3ForCausalLM, Qwen3MoeConfig, Qwen3MoeForCausalLM

    torch.manual_seed(0)
    shape = {**TINY, "head_dim": 128}
    if arch == "qwen3":
        return perturbed(Qwen3ForCausalLM(Qwen3Config(**shape, tie_word_embeddings=True)))
    config = Qwen3MoeConfig(**shape, moe_intermediate_size=768, num_experts=4, num_experts_per_tok=2,
                            norm_topk_prob=True, tie_word_embeddings=False)
    return perturbed(Qwen3MoeForCausalLM(config))


def _assert_check_passes(model, tmp_path) -> None:
    """The command on ``model`` (a GGUF or an HF folder): exit 0, all 75 positions agreeing."""
    command = [sys.executable, "-m", "mcp.commands.cli", "check", "consistency", "--suite", "ci", "--model", str(model),
               "--engines", "native-fp32", "--markdown", str(tmp_path / "report.md")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "MCP_HOME": str(tmp_path / "home")})
    assert done.returncode == 0, done.stderr[-3000:]
    report = (tmp_path / "report.md").read_text()
    assert f"model {model.name}" in report and "| native-fp32 | 75 | 100.00% |" in report and "**PASSED**" in report


@pytest.mark.parametrize("arch", ["qwen3", "qwen3moe"])
def test_check_consistency_passes_on_the_family(arch, smollm2_gguf, tmp_path):
    path = tmp_path / f"tiny-{arch}.gguf"
    write_gguf(_tiny_qwen3(arch), path, arch, tokenizer=gguf.GGUFReader(smollm2_gguf))
    _assert_check_passes(path, tmp_path)


def test_check_consistency_passes_on_a_phi3_gguf(smollm2_gguf, tmp_path):
    path = tmp_path / "tiny-phi3.gguf"
    write_phi3_gguf(tiny_phi3(longrope=False, window=None, partial_rotary=1.0), path,
                    tokenizer=gguf.GGUFReader(smollm2_gguf))
    _assert_check_passes(path, tmp_path)


@pytest.mark.parametrize("family", ["phi3", "mistral"])
def test_check_consistency_passes_on_the_windowed_family_from_its_hf_folder(family, tokenizer_files, tmp_path):
    hf_model = tiny_phi3(longrope=True, original=ORIGINAL, window=WINDOW) if family == "phi3" else tiny_mistral(WINDOW)
    assert _window_mse(hf_model, IDS[:13]) > 1e-4  # an engine without the window would fail max_mse 1e-6
    _assert_check_passes(save_folder(hf_model, tokenizer_files, tmp_path / f"tiny-{family}"), tmp_path)


def _window_mse(hf_model, ids: list[int]) -> float:
    """Mean squared difference of transformers' logits over ``ids`` with and without the window."""
    unwindowed = type(hf_model)(hf_model.config.__class__(**{**hf_model.config.to_dict(), "sliding_window": None}))
    unwindowed.load_state_dict(hf_model.state_dict())
    with torch.inference_mode():
        windowed, full = (model.eval()(torch.tensor([ids])).logits[0] for model in (hf_model, unwindowed))
    return ((windowed - full) ** 2).mean().item()

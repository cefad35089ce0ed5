"""``mcp2026 check consistency`` on the decoder families added after Llama: tiny random Qwen3 and
Qwen3-MoE models written as GGUF with SmolLM2's tokenizer (so that the ci suite's chat prompts
are real text), the native engine in fp32 against transformers in fp32 from the same file, through
the real command. Gemma 3 runs it as a catalog model (docs/consistency.md).

head_dim 128 and an expert size of 768 are the configs' defaults: transformers' GGUF reader takes
those from its config defaults, not from the file's ``key_length`` and
``expert_feed_forward_length``, so other sizes would not load there.
"""

from __future__ import annotations

import os
import subprocess
import sys

import gguf
import pytest
import torch
from qwen3_models import TINY, perturbed, write_gguf

pytestmark = pytest.mark.slow


def _tiny(arch: str):
    from transformers import Qwen3Config, Qwen3ForCausalLM, Qwen3MoeConfig, Qwen3MoeForCausalLM

    torch.manual_seed(0)
    shape = {**TINY, "head_dim": 128}
    if arch == "qwen3":
        return perturbed(Qwen3ForCausalLM(Qwen3Config(**shape, tie_word_embeddings=True)))
    config = Qwen3MoeConfig(**shape, moe_intermediate_size=768, num_experts=4, num_experts_per_tok=2,
                            norm_topk_prob=True, tie_word_embeddings=False)
    return perturbed(Qwen3MoeForCausalLM(config))


@pytest.mark.parametrize("arch", ["qwen3", "qwen3moe"])
def test_check_consistency_passes_on_the_family(arch, smollm2_gguf, tmp_path):
    path = tmp_path / f"tiny-{arch}.gguf"
    write_gguf(_tiny(arch), path, arch, tokenizer=gguf.GGUFReader(smollm2_gguf))
    command = [sys.executable, "-m", "mcp.commands.cli", "check", "consistency", "--suite", "ci", "--model", str(path),
               "--engines", "native-fp32", "--markdown", str(tmp_path / "report.md")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "MCP_HOME": str(tmp_path / "home")})
    assert done.returncode == 0, done.stderr[-3000:]
    report = (tmp_path / "report.md").read_text()
    assert f"model {path.name}" in report and "| native-fp32 | 75 | 100.00% |" in report and "**PASSED**" in report

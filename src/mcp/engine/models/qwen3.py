"""Qwen3 and Qwen3-MoE: the Llama decoder with q/k RMSNorm, and for Qwen3-MoE sparse MLPs.

What differs from Llama (models/llama.py), as transformers' Qwen3ForCausalLM and
Qwen3MoeForCausalLM compute it: queries and keys are RMS-normalised per head before RoPE
(``QKNormAttention``), with no q/k/v bias and ``head_dim`` from the config (Qwen3-0.6B: 128 with
1024 / 16 = 64); in Qwen3-MoE a layer for which ``is_sparse_layer`` holds replaces the SwiGLU
MLP by a router over ``num_experts`` SwiGLU experts, ``num_experts_per_tok`` a token
(``SparseMoE``). Everything else (embedding, RoPE, norms, head, caches) is Llama's.

Both also run the native decode step (models/llama_step.py: Llama's step with the q/k norms, and
Qwen3-MoE's layers of experts in csrc/moe.inc) where every matrix is on the native kernels and the
routers dense fp32; otherwise the torch modules, whose matrices, the experts' included, use the
native kernels where the plan says.
"""

from __future__ import annotations

import torch

from mcp.engine.layers.linear import LinearGroup
from mcp.engine.layers.mlp import SwiGLU
from mcp.engine.layers.moe import SparseMoE
from mcp.engine.layers.norm import RMSNorm
from mcp.engine.layers.qk_norm import QKNormAttention
from mcp.engine.models.llama import LlamaForCausalLM
from mcp.engine.weights import ModelWeights
from mcp.modelfile.moe import is_sparse_layer
from mcp.modelfile.spec import ArchitectureConfig


def swiglu(weights: ModelWeights, prefix: str) -> SwiGLU:
    """The SwiGLU MLP whose projections are ``{prefix}.gate_proj``, ``up_proj`` and ``down_proj``."""
    return SwiGLU(LinearGroup([weights.linear(f"{prefix}.{p}_proj") for p in ("gate", "up")]),
                  weights.linear(f"{prefix}.down_proj"))


def sparse_moe(arch: ArchitectureConfig, weights: ModelWeights, prefix: str) -> SparseMoE:
    """The router ``{prefix}.gate`` and experts ``{prefix}.experts.{e}``."""
    experts = [swiglu(weights, f"{prefix}.experts.{e}") for e in range(arch.num_experts)]
    return SparseMoE(weights.linear(f"{prefix}.gate"), experts, arch.num_experts_per_tok, arch.norm_topk_prob)


class Qwen3DecoderLayer(torch.nn.Module):
    """Llama's layer with QK-norm attention and, when sparse, experts."""

    def __init__(self, arch: ArchitectureConfig, weights: ModelWeights, prefix: str) -> None:
        super().__init__()
        index = int(prefix.removeprefix("model.layers."))  # Llama's frame names layers by prefix
        self.input_layernorm = RMSNorm(weights.tensor(f"{prefix}.input_layernorm.weight"), arch.rms_norm_eps)
        self.self_attn = QKNormAttention(arch, weights, f"{prefix}.self_attn")
        self.post_attention_layernorm = RMSNorm(weights.tensor(f"{prefix}.post_attention_layernorm.weight"),
                                                arch.rms_norm_eps)
        sparse = is_sparse_layer(arch, index)
        self.mlp = sparse_moe(arch, weights, f"{prefix}.mlp") if sparse else swiglu(weights, f"{prefix}.mlp")

    def forward(self, x, angles, cache, inputs):
        x = x + self.self_attn(self.input_layernorm(x), angles, cache, inputs)
        return x + self.mlp(self.post_attention_layernorm(x))


class Qwen3ForCausalLM(LlamaForCausalLM):
    """Qwen3 (family ``qwen3``) and Qwen3-MoE (``qwen3_moe``): Llama's frame, Qwen3's layers."""

    layer_class = Qwen3DecoderLayer

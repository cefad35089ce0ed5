"""Attention whose queries and keys are RMS-normalised per head before RoPE (Gemma 3, Qwen3).

The norm runs over each head's ``head_dim`` values with one weight vector shared by every query
head (``q_norm``) and one by every key head (``k_norm``), as Hugging Face's Gemma3Attention and
Qwen3Attention compute it; the rest is ``Attention``'s, over the same caches and layouts.
"""

from __future__ import annotations

import torch

from mcp.engine.layers.attention import Attention
from mcp.engine.layers.linear import LinearGroup
from mcp.engine.layers.norm import RMSNorm
from mcp.engine.layers.rotary import apply_rotary
from mcp.engine.weights import ModelWeights
from mcp.modelfile.spec import ArchitectureConfig


class QKNormAttention(Attention):
    """Grouped-query attention whose queries and keys are RMS-normalised per head before RoPE;
    scores scaled by ``query_pre_attn_scalar ** -0.5`` (Gemma 3's; None: ``head_dim``'s)."""

    def __init__(self, arch: ArchitectureConfig, weights: ModelWeights, prefix: str) -> None:
        super().__init__(
            LinearGroup([weights.linear(f"{prefix}.{p}_proj") for p in ("q", "k", "v")]),
            weights.linear(f"{prefix}.o_proj"),
            num_heads=arch.num_attention_heads, num_kv_heads=arch.num_kv_heads, head_dim=arch.head_dim,
        )
        self.q_norm = RMSNorm(weights.tensor(f"{prefix}.q_norm.weight"), arch.rms_norm_eps)
        self.k_norm = RMSNorm(weights.tensor(f"{prefix}.k_norm.weight"), arch.rms_norm_eps)
        self.scale = (arch.query_pre_attn_scalar or arch.head_dim) ** -0.5

    def _project(self, x: torch.Tensor, angles: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        batch, length, _ = x.shape
        heads, kv_heads, dim = self.num_heads, self.num_kv_heads, self.head_dim
        qkv = self.qkv_proj(x)  # [B, T, (H + 2 KVH) D]
        q = self.q_norm(qkv[..., : heads * dim].view(batch, length, heads, dim))
        k = self.k_norm(qkv[..., heads * dim: (heads + kv_heads) * dim].view(batch, length, kv_heads, dim))
        qk = apply_rotary(torch.cat((q, k), dim=2), angles)  # [B, T, H + KVH, D]
        return qk, qkv[..., (heads + kv_heads) * dim:].view(batch, length, kv_heads, dim)

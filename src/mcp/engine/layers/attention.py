"""Grouped-query self-attention over a preallocated KV cache."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from mcp.engine.kv.cache import LayerCache
from mcp.engine.layers.linear import Linear
from mcp.engine.layers.rotary import RotaryEmbedding


class Attention(torch.nn.Module):
    def __init__(
        self,
        q_proj: Linear,
        k_proj: Linear,
        v_proj: Linear,
        o_proj: Linear,
        num_heads: int,
        num_kv_heads: int,
        head_dim: int,
    ) -> None:
        super().__init__()
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = q_proj, k_proj, v_proj, o_proj
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = head_dim

    def forward(
        self,
        x: torch.Tensor,
        positions: torch.Tensor,
        rotary: RotaryEmbedding,
        cache: LayerCache,
        start: int,
    ) -> torch.Tensor:
        # x: [B, T, hidden]; positions: [B, T]; the new tokens occupy cache slots start..start+T
        batch, length, _ = x.shape
        q = self._heads(self.q_proj(x), self.num_heads)  # [B, H, T, D]
        k = self._heads(self.k_proj(x), self.num_kv_heads)  # [B, KVH, T, D]
        v = self._heads(self.v_proj(x), self.num_kv_heads)
        q, k = rotary(q, k, positions)
        keys, values = cache.append(k, v, start)  # [B, KVH, start+T, D]
        out = F.scaled_dot_product_attention(
            q, keys, values, attn_mask=_causal_mask(start, length, x.device), enable_gqa=True
        )  # [B, H, T, D]
        return self.o_proj(out.transpose(1, 2).reshape(batch, length, -1))

    def _heads(self, x: torch.Tensor, num_heads: int) -> torch.Tensor:
        batch, length, _ = x.shape
        return x.view(batch, length, num_heads, self.head_dim).transpose(1, 2)


def _causal_mask(start: int, length: int, device: torch.device) -> torch.Tensor | None:
    """Boolean [T, start+T] mask letting query i see keys 0..start+i; None for one query."""
    if length == 1:
        return None
    query_pos = torch.arange(start, start + length, device=device)
    key_pos = torch.arange(start + length, device=device)
    return key_pos[None, :] <= query_pos[:, None]

"""Grouped-query self-attention over a preallocated KV cache, for a batch of rows.

Each row of the batch is one sequence with its own length. What every layer needs to know
about that (positions, cache slots, how far to read, the mask) is an ``AttentionInputs``
built once per forward by ``attention_inputs`` and handed to each layer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from mcp.engine.kv.cache import KVCache, LayerCache, Slots
from mcp.engine.layers.linear import LinearGroup
from mcp.engine.layers.rotary import apply_rotary


@dataclass(frozen=True)
class AttentionInputs:
    """One forward's batch layout, shared by every layer."""

    positions: torch.Tensor  # [B, T] position of each new token, which is also its cache slot
    slots: Slots  # where the new keys/values go
    kv_len: int  # cache slots read per row: the longest row's length after this forward
    mask: torch.Tensor | None  # [B or 1, 1, T, kv_len] True = may attend; None: every query sees all


def attention_inputs(lengths: Sequence[int], num_new: int, cache: KVCache) -> AttentionInputs:
    """Layout of ``num_new`` new tokens per row, row b already holding ``lengths[b]`` tokens.

    Query t of row b sees keys 0..lengths[b]+t; only the slots in use are read. With one new
    token per row and rows of equal length that is every key read, so no mask is built
    (SDPA's fastest path); rows of equal length share one mask.
    """
    kv_len = max(lengths) + num_new
    uniform = min(lengths) == kv_len - num_new
    steps = cache.slot_ids[:num_new]
    if uniform:
        positions = (steps + lengths[0]).expand(len(lengths), num_new)  # [B, T]
    else:
        positions = torch.tensor(lengths, device=steps.device)[:, None] + steps  # [B, T]
    mask = None
    if not (uniform and num_new == 1):
        rows = positions[:1] if uniform else positions
        mask = (cache.slot_ids[:kv_len][None, None, :] <= rows[:, :, None])[:, None]  # [B or 1, 1, T, kv_len]
    slots = Slots(positions, lengths[0]) if uniform else _ragged_slots(positions)
    return AttentionInputs(positions, slots, kv_len, mask)


def static_attention_inputs(positions: torch.Tensor, cache: KVCache) -> AttentionInputs:
    """Layout of one new token per row at ``positions`` [B, 1], reading the whole cache.

    Its shapes are the cache's alone and it is tensor ops only, so a compiled decode step
    traces it into its graph and sees no new shape from one step to the next.
    """
    mask = (cache.slot_ids[None, None, :] <= positions[:, :, None])[:, None]  # [B, 1, 1, max_len]
    return AttentionInputs(positions, _ragged_slots(positions), cache.max_len, mask)


def _ragged_slots(positions: torch.Tensor) -> Slots:
    rows = torch.arange(positions.shape[0], device=positions.device)[:, None]  # [B, 1]
    return Slots(positions, None, rows)


class Attention(torch.nn.Module):
    def __init__(
        self,
        qkv_proj: LinearGroup,  # q, k, v projections: [H*D | KVH*D | KVH*D] outputs
        o_proj: torch.nn.Module,
        num_heads: int,
        num_kv_heads: int,
        head_dim: int,
    ) -> None:
        super().__init__()
        expected = [num_heads * head_dim, num_kv_heads * head_dim, num_kv_heads * head_dim]
        if qkv_proj.sizes != expected:
            raise ValueError(f"q/k/v projections give {qkv_proj.sizes} outputs, the heads need {expected}")
        self.qkv_proj, self.o_proj = qkv_proj, o_proj
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = head_dim

    def forward(
        self, x: torch.Tensor, angles: tuple[torch.Tensor, torch.Tensor], cache: LayerCache, inputs: AttentionInputs
    ) -> torch.Tensor:
        # x: [B, T, hidden]; the new tokens go to the cache slots inputs.positions
        batch, length, _ = x.shape
        heads, kv_heads, dim = self.num_heads, self.num_kv_heads, self.head_dim
        qkv = self.qkv_proj(x)  # [B, T, (H + 2 KVH) D]
        qk = apply_rotary(qkv[..., : (heads + kv_heads) * dim].view(batch, length, heads + kv_heads, dim), angles)
        q = qk[:, :, :heads].transpose(1, 2)  # [B, H, T, D]
        k = qk[:, :, heads:].transpose(1, 2)  # [B, KVH, T, D]
        v = qkv[..., (heads + kv_heads) * dim:].view(batch, length, kv_heads, dim).transpose(1, 2)
        keys, values = cache.write(k, v, inputs.slots, inputs.kv_len)  # [B, KVH, kv_len, D]
        out = F.scaled_dot_product_attention(q, keys, values, attn_mask=inputs.mask, enable_gqa=True)
        return self.o_proj(out.transpose(1, 2).reshape(batch, length, -1))  # out: [B, H, T, D]

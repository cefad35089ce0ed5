"""Grouped-query self-attention over a preallocated KV cache, for a batch of rows.

Each row of the batch is one sequence with its own length. What every layer needs to know
about that (positions, cache slots, how far to read, the mask) is an ``AttentionInputs``
built once per forward by ``attention_inputs`` and handed to each layer.

Over a paged KV cache (``kv/paged.py``) a forward is one continuous-batching step instead:
every sequence's new tokens flattened into one row [1, N] (the linear layers are per token),
and attention run per group of rows (all one-token rows together, each longer chunk alone)
on keys gathered from the rows' block tables. ``paged_attention_inputs`` builds that layout,
a ``PagedAttentionInputs``, once per step; ``Attention.forward`` takes either kind.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from mcp.engine.kv.cache import KVCache, LayerCache, Slots
from mcp.engine.kv.paged import PagedLayer
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


@dataclass(frozen=True)
class AttentionGroup:
    """Rows of a paged step attending in one SDPA: ``num_rows`` rows of equal query count,
    whose queries are the step's tokens token_start..token_stop-1, row after row."""

    token_start: int
    token_stop: int
    num_rows: int
    blocks: torch.Tensor  # [B, num_blocks] each row's block table, padded to the longest
    kv_len: int  # key slots read per row: the longest row's length after this step
    mask: torch.Tensor | None  # [B, 1, T, kv_len] True = may attend; None: every query sees all


@dataclass(frozen=True)
class PagedAttentionInputs:
    """One paged step's layout, shared by every layer."""

    positions: torch.Tensor  # [1, N] each new token's position in its own sequence
    slots: torch.Tensor  # [N] each new token's flat slot in the paged cache
    groups: tuple[AttentionGroup, ...]  # in token order; their outputs concatenated are [N, ...]


def paged_attention_inputs(
    starts: Sequence[int],
    num_new: Sequence[int],
    block_tables: Sequence[Sequence[int]],
    block_size: int,
    device: torch.device,
) -> PagedAttentionInputs:
    """Layout of a step whose row r brings ``num_new[r]`` tokens at positions starts[r]..

    Consecutive one-token rows (decodes) share one SDPA under a padding mask; every other row
    (a prefill chunk) has its own, causal from its cached prefix: query t sees keys
    0..starts[r]+t. The caller's block tables must cover every position they write.
    """
    positions = [p for start, n in zip(starts, num_new) for p in range(start, start + n)]
    rows = [r for r, n in enumerate(num_new) for _ in range(n)]
    slots = [block_tables[r][p // block_size] * block_size + p % block_size for r, p in zip(rows, positions)]
    groups, token = [], 0
    for first, stop in _group_rows(num_new):
        group = _attention_group(token, starts[first:stop], num_new[first], block_tables[first:stop],
                                 block_size, device)
        groups.append(group)
        token = group.token_stop
    return PagedAttentionInputs(torch.tensor([positions], device=device), torch.tensor(slots, device=device),
                                tuple(groups))


def _group_rows(num_new: Sequence[int]) -> list[tuple[int, int]]:
    """Runs of rows (first, stop) attending together: one-token rows in a run, others alone."""
    runs: list[tuple[int, int]] = []
    for row, n in enumerate(num_new):
        if n == 1 and runs and runs[-1][1] == row and num_new[runs[-1][0]] == 1:
            runs[-1] = (runs[-1][0], row + 1)
        else:
            runs.append((row, row + 1))
    return runs


def _attention_group(
    token_start: int, starts: Sequence[int], num_new: int, block_tables: Sequence[Sequence[int]],
    block_size: int, device: torch.device,
) -> AttentionGroup:
    """Rows each bringing ``num_new`` tokens at ``starts``; row r reads keys 0..starts[r]+num_new-1."""
    lengths = [start + num_new for start in starts]
    kv_len = max(lengths)
    num_blocks = -(-kv_len // block_size)
    # A short row is padded with its own first block: finite values, masked out.
    tables = [list(table[:num_blocks]) + [table[0]] * (num_blocks - len(table)) for table in block_tables]
    mask = None
    if num_new > 1 or min(lengths) != kv_len:
        key_ids = torch.arange(kv_len, device=device)  # [kv_len]
        last_visible = torch.tensor(starts, device=device)[:, None] + torch.arange(num_new, device=device)  # [B, T]
        mask = (key_ids[None, None, :] <= last_visible[:, :, None])[:, None]  # [B, 1, T, kv_len]
    return AttentionGroup(token_start, token_start + len(starts) * num_new, len(starts),
                          torch.tensor(tables, device=device), kv_len, mask)


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
        self.scale: float | None = None  # of q·k; None: SDPA's 1/sqrt(head_dim)

    def forward(
        self,
        x: torch.Tensor,
        angles: tuple[torch.Tensor, torch.Tensor],
        cache: LayerCache | PagedLayer,
        inputs: AttentionInputs | PagedAttentionInputs,
    ) -> torch.Tensor:
        if isinstance(inputs, PagedAttentionInputs):
            return self._paged_forward(x, angles, cache, inputs)
        # x: [B, T, hidden]; the new tokens go to the cache slots inputs.positions
        batch, length, _ = x.shape
        heads = self.num_heads
        qk, v = self._project(x, angles)  # [B, T, H + KVH, D], [B, T, KVH, D]
        q = qk[:, :, :heads].transpose(1, 2)  # [B, H, T, D]
        k = qk[:, :, heads:].transpose(1, 2)  # [B, KVH, T, D]
        keys, values = cache.write(k, v.transpose(1, 2), inputs.slots, inputs.kv_len)  # [B, KVH, kv_len, D]
        out = F.scaled_dot_product_attention(q, keys, values, attn_mask=inputs.mask, enable_gqa=True,
                                             scale=self.scale)
        return self.o_proj(out.transpose(1, 2).reshape(batch, length, -1))  # out: [B, H, T, D]

    def _project(
        self, x: torch.Tensor, angles: tuple[torch.Tensor, torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Rotated queries and keys [B, T, H + KVH, D] (heads first) and values [B, T, KVH, D]."""
        batch, length, _ = x.shape
        heads, kv_heads, dim = self.num_heads, self.num_kv_heads, self.head_dim
        qkv = self.qkv_proj(x)  # [B, T, (H + 2 KVH) D]
        qk = apply_rotary(qkv[..., : (heads + kv_heads) * dim].view(batch, length, heads + kv_heads, dim), angles)
        return qk, qkv[..., (heads + kv_heads) * dim:].view(batch, length, kv_heads, dim)

    def _paged_forward(
        self, x: torch.Tensor, angles: tuple[torch.Tensor, torch.Tensor], cache: PagedLayer,
        inputs: PagedAttentionInputs,
    ) -> torch.Tensor:
        # x: [1, N, hidden], every token of the step; linear layers see them as one batch
        heads = self.num_heads
        qk, v = self._project(x, angles)  # [1, N, H + KVH, D], [1, N, KVH, D]
        cache.write(qk[0, :, heads:], v[0], inputs.slots)
        q = qk[0, :, :heads]  # [N, H, D]
        outs = [self._group_attention(q, cache, group) for group in inputs.groups]  # [tokens, H, D] each
        out = outs[0] if len(outs) == 1 else torch.cat(outs)  # [N, H, D]
        return self.o_proj(out.view(1, q.shape[0], -1))

    def _group_attention(self, q: torch.Tensor, cache: PagedLayer, group: AttentionGroup) -> torch.Tensor:
        """One SDPA for ``group``'s queries (of q [N, H, D]); returns [tokens, H, D]."""
        rows, heads, dim = group.num_rows, self.num_heads, self.head_dim
        queries = q[group.token_start:group.token_stop].view(rows, -1, heads, dim).transpose(1, 2)  # [B, H, T, D]
        keys, values = cache.gather(group.blocks, group.kv_len)  # [B, KVH, kv_len, D]
        if keys.dtype != q.dtype:  # a cache of halves under fp32 activations: widened for SDPA
            keys, values = keys.to(q.dtype), values.to(q.dtype)
        out = F.scaled_dot_product_attention(queries, keys, values, attn_mask=group.mask, enable_gqa=True,
                                             scale=self.scale)
        return out.transpose(1, 2).reshape(-1, heads, dim)  # out: [B, H, T, D]

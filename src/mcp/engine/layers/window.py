"""Sliding-window attention: a forward's layout narrowed so that a query sees only the last
``window`` positions (keys at q - window + 1 .. q), as Gemma 3's local layers and Hugging Face's
sliding-window causal mask do.

The layout (``AttentionInputs`` or ``PagedAttentionInputs``) is built once per forward for the
global layers; ``windowed`` derives the local layers' from it, also once per forward, by adding
the window's condition to each mask. Where no query can reach past the window (every row
shorter than it) the layout is returned as it is.
"""

from __future__ import annotations

import dataclasses

import torch

from mcp.engine.layers.attention import AttentionGroup, AttentionInputs, PagedAttentionInputs


def windowed(inputs: AttentionInputs | PagedAttentionInputs, window: int) -> AttentionInputs | PagedAttentionInputs:
    """``inputs`` with every query's keys limited to the ``window`` positions ending at its own."""
    if isinstance(inputs, PagedAttentionInputs):
        groups = tuple(_windowed_group(group, inputs.positions[0], window) for group in inputs.groups)
        return dataclasses.replace(inputs, groups=groups)
    if inputs.kv_len <= window:
        return inputs
    return dataclasses.replace(inputs, mask=_narrowed(inputs.mask, inputs.positions, inputs.kv_len, window))


def _windowed_group(group: AttentionGroup, positions: torch.Tensor, window: int) -> AttentionGroup:
    if group.kv_len <= window:
        return group
    rows = positions[group.token_start:group.token_stop].view(group.num_rows, -1)  # [B, T]
    return dataclasses.replace(group, mask=_narrowed(group.mask, rows, group.kv_len, window))


def _narrowed(mask: torch.Tensor | None, positions: torch.Tensor, kv_len: int, window: int) -> torch.Tensor:
    """mask [B or 1, 1, T, kv_len] (None: all visible) and'ed with key > position - window."""
    key_ids = torch.arange(kv_len, device=positions.device)  # [kv_len]; a key's slot is its position
    near = (key_ids[None, None, :] > positions[:, :, None] - window)[:, None]  # [B, 1, T, kv_len]
    return near if mask is None else near & mask

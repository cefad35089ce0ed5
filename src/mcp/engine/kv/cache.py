"""A contiguous, preallocated KV cache: one [B, KVH, max_len, D] buffer pair per layer.

Allocated once per generation, written in place each step; nothing grows while decoding.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class LayerCache:
    keys: torch.Tensor  # [B, KVH, max_len, D]
    values: torch.Tensor  # [B, KVH, max_len, D]

    def append(
        self, k: torch.Tensor, v: torch.Tensor, start: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write k/v [B, KVH, T, D] at slots start..start+T; return keys/values up to there."""
        end = start + k.shape[2]
        self.keys[:, :, start:end] = k
        self.values[:, :, start:end] = v
        return self.keys[:, :, :end], self.values[:, :, :end]


class KVCache:
    def __init__(
        self,
        num_layers: int,
        batch_size: int,
        num_kv_heads: int,
        max_len: int,
        head_dim: int,
        dtype: torch.dtype,
        device: torch.device,
    ) -> None:
        shape = (batch_size, num_kv_heads, max_len, head_dim)
        self.max_len = max_len
        self.layers = [
            LayerCache(torch.zeros(shape, dtype=dtype, device=device),
                       torch.zeros(shape, dtype=dtype, device=device))
            for _ in range(num_layers)
        ]

    def __getitem__(self, layer: int) -> LayerCache:
        return self.layers[layer]

    @property
    def num_bytes(self) -> int:
        return sum(c.keys.nbytes + c.values.nbytes for c in self.layers)

"""A preallocated KV cache for a batch of sequences: one [B, KVH, max_len, D] pair per layer.

Allocated once per batch, written in place each step; nothing grows while decoding. Row b
holds one sequence and a token's slot is its position. The live rows are always the first
``num_rows``: when a sequence finishes, ``remove`` moves the last live row into its place
(copying only the slots in use) and the batch shrinks by one, so a finished sequence costs
no compute in the steps after it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Slots:
    """Where one forward's new tokens [B, T] go in the cache.

    Rows of equal length write one slice from ``start``; otherwise ``rows`` and
    ``positions`` index each token (a scatter would be simpler, but in bf16 on CPU it
    costs ~30x a slice copy).
    """

    positions: torch.Tensor  # [B, T] each token's slot (its position)
    start: int | None  # rows level: every row's tokens take slots start..start+T-1
    rows: torch.Tensor | None = None  # [B, 1] each token's row, when the rows are ragged


class LayerCache:
    """One layer's keys and values over a window of rows."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor) -> None:
        self.keys = keys  # [B, KVH, max_len, D]
        self.values = values  # [B, KVH, max_len, D]

    def write(
        self, k: torch.Tensor, v: torch.Tensor, slots: Slots, kv_len: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Store k/v [B, KVH, T, D] at ``slots``; return each row's keys/values over slots 0..kv_len-1."""
        if slots.start is not None:
            end = slots.start + k.shape[2]
            self.keys[:, :, slots.start:end] = k
            self.values[:, :, slots.start:end] = v
        else:
            self.keys[slots.rows, :, slots.positions] = k.transpose(1, 2)  # index [B, T] -> [B, T, KVH, D]
            self.values[slots.rows, :, slots.positions] = v.transpose(1, 2)
        return self.keys[:, :, :kv_len], self.values[:, :, :kv_len]


class KVCache:
    """Keys and values of ``num_rows`` live sequences, rows start..start+num_rows-1 of the storage."""

    def __init__(self, storage: list[tuple[torch.Tensor, torch.Tensor]], start: int, stop: int) -> None:
        self._storage = storage  # per layer (keys, values) [capacity, KVH, max_len, D]
        self.max_len = storage[0][0].shape[2]
        self.slot_ids = torch.arange(self.max_len, device=storage[0][0].device)  # [max_len], for masks
        self.num_removed = 0  # rows dropped by ``remove`` so far
        self._set_window(start, stop)

    @classmethod
    def allocate(
        cls,
        num_layers: int,
        batch_size: int,
        num_kv_heads: int,
        max_len: int,
        head_dim: int,
        dtype: torch.dtype,
        device: torch.device,
    ) -> KVCache:
        # Zeros, not empty: a masked slot still enters SDPA as 0 * value, and garbage may be NaN.
        shape = (batch_size, num_kv_heads, max_len, head_dim)
        storage = [
            (torch.zeros(shape, dtype=dtype, device=device), torch.zeros(shape, dtype=dtype, device=device))
            for _ in range(num_layers)
        ]
        return cls(storage, 0, batch_size)

    def _set_window(self, start: int, stop: int) -> None:
        self.start, self.num_rows = start, stop - start
        self.layers = [LayerCache(k[start:stop], v[start:stop]) for k, v in self._storage]

    def __getitem__(self, layer: int) -> LayerCache:
        return self.layers[layer]

    def select(self, start: int, stop: int) -> KVCache:
        """A view of live rows start..stop-1 sharing this storage (to prefill some rows)."""
        if not 0 <= start < stop <= self.num_rows:
            raise ValueError(f"rows {start}..{stop - 1} are outside the {self.num_rows} live rows")
        return KVCache(self._storage, self.start + start, self.start + stop)

    def remove(self, row: int, num_slots: int) -> None:
        """Drop live row ``row``: the last live row moves into it (its first ``num_slots``
        slots are copied) and the batch shrinks by one; the caller renumbers that row."""
        last = self.num_rows - 1
        if not 0 <= row <= last:
            raise ValueError(f"row {row} is not one of the {self.num_rows} live rows")
        if row != last:
            for layer in self.layers:
                layer.keys[row, :, :num_slots] = layer.keys[last, :, :num_slots]
                layer.values[row, :, :num_slots] = layer.values[last, :, :num_slots]
        self.num_removed += 1
        self._set_window(self.start, self.start + last)

    @property
    def num_bytes(self) -> int:
        return sum(k.nbytes + v.nbytes for k, v in self._storage)

"""The paged KV storage: tokens written at flat slots come back in position order from block tables."""

from __future__ import annotations

import pytest
import torch

from mcp.engine.kv.paged import PagedKVStorage

BLOCK = 4


def _storage(num_blocks: int = 6) -> PagedKVStorage:
    storage = PagedKVStorage(num_layers=2, num_blocks=num_blocks, block_size=BLOCK, num_kv_heads=2, head_dim=3,
                             dtype=torch.float32, device="cpu")
    storage.zero_until(num_blocks)
    return storage


def _slots(table: list[int], positions: range) -> torch.Tensor:
    return torch.tensor([table[p // BLOCK] * BLOCK + p % BLOCK for p in positions])


def test_blocks_are_zeroed_up_to_the_block_asked_for_and_only_once():
    storage = PagedKVStorage(num_layers=2, num_blocks=6, block_size=BLOCK, num_kv_heads=2, head_dim=3,
                             dtype=torch.float32, device="cpu")
    assert storage.num_zeroed_blocks == 0
    storage.zero_until(2)
    assert storage.num_zeroed_blocks == 2 and not storage[1].keys[:2].any() and not storage[0].values[:2].any()
    storage[0].write(torch.ones(1, 2, 3), torch.ones(1, 2, 3), torch.tensor([0]))
    storage.zero_until(4)  # blocks 2 and 3 zeroed; block 0's token is kept
    assert storage.num_zeroed_blocks == 4 and not storage[0].keys[2:4].any()
    assert storage[0].keys[0, 0].eq(1).all()
    storage.zero_until(99)  # capped at the storage's size
    assert storage.num_zeroed_blocks == 6


def test_storage_starts_zeroed_and_counts_its_bytes():
    storage = _storage()
    layer = storage[1]
    assert layer.keys.shape == (6, BLOCK, 2, 3) and not layer.keys.any() and not layer.values.any()
    assert storage.num_slots == 24
    assert storage.num_bytes == 2 * 2 * 6 * BLOCK * 2 * 3 * 4  # layers, k+v, blocks, slots, heads, dim, fp32
    per_block = PagedKVStorage.bytes_per_block(2, BLOCK, 2, 3, torch.float32)
    assert storage.num_bytes == 6 * per_block
    assert PagedKVStorage.blocks_within(6 * per_block + per_block - 1, 2, BLOCK, 2, 3, torch.float32) == 6
    assert PagedKVStorage.blocks_within(per_block - 1, 2, BLOCK, 2, 3, torch.float32) == 0
    assert PagedKVStorage.bytes_per_block(2, BLOCK, 2, 3, torch.bfloat16) == per_block // 2


def test_gather_returns_each_row_in_position_order_across_scattered_blocks():
    storage = _storage()
    layer = storage[0]
    tables = [[5, 1, 3], [2, 0]]  # deliberately out of order
    lengths = [10, 6]
    tokens = [torch.randn(n, 2, 3) for n in lengths]  # [T, KVH, D] per sequence
    for table, k in zip(tables, tokens):
        layer.write(k, -k, _slots(table, range(len(k))))
    keys, values = layer.gather(torch.tensor([tables[0], tables[1] + [tables[1][0]]]), kv_len=10)
    assert keys.shape == values.shape == (2, 2, 10, 3)  # [B, KVH, L, D]
    for row, k in enumerate(tokens):
        assert torch.equal(keys[row, :, : len(k)], k.transpose(0, 1))
        assert torch.equal(values[row, :, : len(k)], -k.transpose(0, 1))
    assert torch.equal(storage[1].keys, torch.zeros_like(storage[1].keys))  # other layers untouched


def test_writes_in_pieces_equal_one_write():
    storage = _storage()
    layer = storage[0]
    table = [4, 0, 2]
    k = torch.randn(11, 2, 3)
    for start, stop in [(0, 3), (3, 9), (9, 10), (10, 11)]:  # prefill chunks, then a decode token
        layer.write(k[start:stop], k[start:stop], _slots(table, range(start, stop)))
    keys, _ = layer.gather(torch.tensor([table]), kv_len=11)
    assert torch.equal(keys[0], k.transpose(0, 1))


def test_rejects_an_empty_storage():
    with pytest.raises(ValueError, match="at least one block"):
        _storage(num_blocks=0)

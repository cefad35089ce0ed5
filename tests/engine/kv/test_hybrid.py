"""HybridKVCacheManager and split_budget: a pool for the global layers holding every position, a
pool for the windowed layers holding the window, driven as the scheduler drives one manager."""

from __future__ import annotations

import random

import pytest

from mcp.engine.kv.hybrid import HybridKVCacheManager, split_budget
from mcp.engine.kv.manager import DROPPED_BLOCK, KVCacheManager

BLOCK, WINDOW = 4, 8


def hybrid(full_blocks: int = 64, local_blocks: int = 16, caching: bool = True) -> HybridKVCacheManager:
    return HybridKVCacheManager(KVCacheManager(full_blocks, BLOCK, caching),
                                KVCacheManager(local_blocks, BLOCK, caching, window_tokens=WINDOW, exact_window=True))


def step(kv: HybridKVCacheManager, seq_id: str, token_ids: list[int], num_computed: int, size: int) -> int:
    """One scheduled chunk of ``size`` tokens: allocate, (the model writes), commit, trim."""
    assert kv.allocate(seq_id, num_computed + size)
    kv.commit(seq_id, token_ids[:num_computed + size])
    kv.trim(seq_id, num_computed + size)
    return num_computed + size


def test_the_local_pool_holds_the_window_while_the_global_pool_holds_every_position() -> None:
    kv, ids = hybrid(), list(range(1000, 1100))
    done = kv.start("a", ids)
    done = step(kv, "a", ids, done, 12)  # a prefill chunk
    held = []
    while done < len(ids):  # then one token a step
        done = step(kv, "a", ids, done, 1)
        held.append(sum(b != DROPPED_BLOCK for b in kv.local_table("a")))
    assert kv.block_table("a") == [b for b in kv.block_table("a") if b != DROPPED_BLOCK]
    assert len(kv.block_table("a")) == 25 and kv.full.num_used_blocks == 25
    # the window's 8 tokens span at most 3 blocks of 4; kept blocks hold the last WINDOW positions
    assert max(held) <= 3 and kv.local.num_used_blocks == held[-1]
    table = kv.local_table("a")
    assert table[:-3] == [DROPPED_BLOCK] * (len(table) - 3) and DROPPED_BLOCK not in table[-2:]
    kv.check_invariants()
    kv.free("a")
    assert (kv.num_used_blocks, kv.num_free_blocks) == (0, 64 + 16)


def test_a_prefix_hit_is_what_both_pools_hold() -> None:
    kv, prompt = hybrid(), list(range(40))
    done = step(kv, "a", prompt, kv.start("a", prompt), len(prompt))
    kv.free("a")
    # both pools cached every full block (the local pool's trimmed ones too: its window is exact)
    assert kv.start("b", prompt + [7]) == 40
    assert kv.block_table("b")[:10] == kv.full.block_table("b")[:10]
    kv.free("b")
    kv.local.allocator.allocate(kv.local.num_free_blocks)  # evicts every cached local block
    assert kv.start("c", prompt + [7]) == 0 and kv.full.block_table("c") == []
    assert done == 40


def test_allocation_takes_both_pools_or_neither() -> None:
    kv = hybrid(full_blocks=64, local_blocks=4)
    kv.start("a", list(range(30)))
    assert not kv.can_allocate("a", 30) and not kv.allocate("a", 30)  # 8 local blocks needed, 4 exist
    assert (kv.full.num_used_blocks, kv.local.num_used_blocks, kv.block_table("a")) == (0, 0, [])
    assert kv.allocate("a", 16) and (kv.full.num_used_blocks, kv.local.num_used_blocks) == (4, 4)
    assert not kv.can_hold(1000, 16)  # the local pool's peak (window + step) exceeds 4 blocks
    assert hybrid().can_hold(200, 16) and not hybrid().can_hold(300, 16)  # the global pool: 64 blocks


def test_a_random_workload_keeps_both_pools_consistent() -> None:
    rng, kv = random.Random(7), hybrid(full_blocks=96, local_blocks=24)
    shared = [rng.randrange(50) for _ in range(12)]
    live: dict[str, tuple[list[int], int]] = {}  # seq id -> (its tokens, how many are computed)
    for turn in range(400):
        if live and rng.random() < 0.15:
            victim = rng.choice(sorted(live))
            kv.free(victim)
            del live[victim]
        if len(live) < 4 and rng.random() < 0.3:
            ids = shared[:rng.randrange(1, 12)] + [rng.randrange(50) for _ in range(rng.randrange(1, 60))]
            live[f"s{turn}"] = (ids, kv.start(f"s{turn}", ids))
        for seq_id, (ids, done) in list(live.items()):
            size = min(len(ids) - done, rng.choice([1, 1, 5, 16]))
            if size and kv.allocate(seq_id, done + size):
                kv.commit(seq_id, ids[:done + size])
                kv.trim(seq_id, done + size)
                live[seq_id] = (ids, done + size)
        kv.check_invariants()
        held = [sum(b != DROPPED_BLOCK for b in kv.local_table(seq_id)) for seq_id in live]
        assert all(n <= -(-(WINDOW + 16) // BLOCK) + 1 for n in held)


def test_the_local_pool_must_be_an_exact_window() -> None:
    with pytest.raises(ValueError, match="exact_window=True"):
        HybridKVCacheManager(KVCacheManager(8, BLOCK), KVCacheManager(8, BLOCK, window_tokens=WINDOW))


def test_split_budget_gives_the_local_pool_its_peak_and_the_rest_to_the_global_layers() -> None:
    layers = [True] * 5 + [False]  # Gemma 3's pattern: 5 local layers to 1 global
    per_layer = 1000  # bytes of one block in one layer
    roomy = split_budget(10_000_000, layers, window_tokens=512, block_size=16, block_bytes_per_layer=per_layer,
                         max_num_seqs=4, max_step_tokens=256)
    peak = -(-(512 + 256) // 16) + 1
    assert roomy.local_blocks == 4 * peak
    assert roomy.full_blocks == (10_000_000 - 4 * peak * 5 * per_layer) // per_layer
    tight = split_budget(600_000, layers, 512, 16, per_layer, max_num_seqs=4, max_step_tokens=256)
    assert tight.local_blocks == 600_000 * 5 // 6 // (5 * per_layer)  # never more than its layers' share
    assert tight.full_blocks == (600_000 - tight.local_blocks * 5 * per_layer) // per_layer

"""KVCacheManager: block tables, prefix sharing, eviction, the sliding window, and a random soak."""

from __future__ import annotations

import random

import pytest

from mcp.engine.kv.blocks import KVAccountingError
from mcp.engine.kv.manager import DROPPED_BLOCK, KVCacheManager


def started(kv: KVCacheManager, seq_id: str, token_ids: list[int]) -> int:
    """Start, allocate and commit a whole prompt, as one prefill step does; returns the cached tokens."""
    cached = kv.start(seq_id, token_ids)
    assert kv.allocate(seq_id, len(token_ids))
    kv.commit(seq_id, token_ids)
    return cached


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"num_blocks": 4, "block_size": 0}, "block_size must be positive, got 0"),
    ({"num_blocks": 0, "block_size": 4}, "num_blocks must be positive, got 0"),
    ({"num_blocks": 4, "block_size": 4, "sink_tokens": -1}, "sink_tokens must be >= 0, got -1"),
    ({"num_blocks": 4, "block_size": 4, "window_tokens": 3}, r"window_tokens must be at least block_size \(4\)"),
])
def test_constructor_rejects_bad_config(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        KVCacheManager(**kwargs)


def test_allocate_until_exhaustion_returns_false_and_changes_nothing() -> None:
    kv = KVCacheManager(num_blocks=4, block_size=4)
    kv.start("a", [1, 2, 3])
    assert kv.allocate("a", 8)
    assert kv.block_table("a") == [0, 1]
    kv.start("b", [4, 5, 6])
    assert not kv.allocate("b", 12)
    assert (kv.block_table("b"), kv.num_free_blocks, kv.num_used_blocks) == ([], 2, 2)
    assert kv.allocate("b", 8)
    assert not kv.allocate("a", 9)
    assert (kv.block_table("a"), kv.num_free_blocks, kv.usage) == ([0, 1], 0, 1.0)
    assert kv.allocate("a", 8)  # already holds 8 tokens: nothing to do
    kv.check_invariants()


def test_blocks_needed_counts_from_the_table_or_from_zero() -> None:
    kv = KVCacheManager(num_blocks=4, block_size=4)
    assert kv.blocks_needed("unknown", 9) == 3
    assert kv.blocks_needed("unknown", 0) == 0
    assert kv.can_allocate("unknown", 16) and not kv.can_allocate("unknown", 17)
    kv.start("a", [1])
    kv.allocate("a", 5)
    assert (kv.blocks_needed("a", 5), kv.blocks_needed("a", 9), kv.blocks_needed("a", 1)) == (0, 1, 0)
    assert kv.can_allocate("a", 16) and not kv.can_allocate("a", 17)
    with pytest.raises(ValueError, match="num_tokens must be >= 0"):
        kv.blocks_needed("a", -1)


def test_same_prompt_shares_its_cached_blocks() -> None:
    kv = KVCacheManager(num_blocks=16, block_size=4)
    prompt = list(range(13))  # three full blocks and one token
    assert started(kv, "a", prompt) == 0
    assert kv.num_cached_blocks == 3
    assert kv.start("b", prompt) == 12
    assert kv.block_table("b") == kv.block_table("a")[:3]
    assert [kv.allocator.refcount(b) for b in kv.block_table("a")] == [2, 2, 2, 1]
    assert kv.allocate("b", 13)
    assert kv.block_table("b")[3] not in kv.block_table("a")
    assert (kv.num_used_blocks, kv.prefix_queries_tokens, kv.prefix_hit_tokens) == (5, 26, 12)
    kv.check_invariants()


def test_same_block_tokens_after_a_different_prefix_do_not_hit() -> None:
    kv = KVCacheManager(num_blocks=16, block_size=4)
    started(kv, "a", [1, 2, 3, 4, 5, 6, 7, 8, 9])
    assert kv.start("b", [0, 0, 0, 0, 5, 6, 7, 8, 9]) == 0
    assert kv.start("c", [1, 2, 3, 4, 0, 0, 0, 0, 9]) == 4
    assert kv.start("d", [1, 2, 3, 4, 5, 6, 7, 8, 0]) == 8
    kv.check_invariants()


def test_a_fully_cached_prompt_backs_off_one_block() -> None:
    kv = KVCacheManager(num_blocks=8, block_size=4)
    prompt = list(range(12))  # exactly three blocks
    started(kv, "a", prompt)
    assert kv.start("b", prompt) == 8  # the last token must be computed to get logits
    assert kv.block_table("b") == kv.block_table("a")[:2]
    assert kv.allocate("b", 12)
    kv.commit("b", prompt)  # its third block repeats a cached hash: kept, not registered
    third = kv.block_table("b")[2]
    assert (third != kv.block_table("a")[2], kv.allocator.hash_of(third), kv.num_cached_blocks) == (True, None, 3)
    kv.free("a")
    kv.free("b")
    assert (kv.num_free_blocks, kv.num_used_blocks, kv.num_cached_blocks) == (8, 0, 3)
    assert (kv.allocator.num_evictable, kv.prefix_hit_tokens) == (3, 8)
    kv.check_invariants()


def test_a_one_token_prompt_is_never_cached() -> None:
    kv = KVCacheManager(num_blocks=4, block_size=1)
    started(kv, "a", [7])
    assert kv.start("b", [7]) == 0
    assert kv.start("c", [7, 8]) == 1


def test_commit_registers_only_full_blocks() -> None:
    kv = KVCacheManager(num_blocks=8, block_size=4)
    tokens = list(range(100, 116))
    kv.start("a", tokens[:10])
    kv.allocate("a", 10)
    kv.commit("a", tokens[:3])
    assert kv.num_cached_blocks == 0
    kv.commit("a", tokens[:9])
    assert kv.num_cached_blocks == 2
    kv.commit("a", tokens[:10])
    assert kv.num_cached_blocks == 2
    with pytest.raises(ValueError, match="13 tokens committed but its blocks hold 12; allocate before"):
        kv.commit("a", tokens[:13])
    kv.allocate("a", 12)
    kv.commit("a", tokens[:12])
    assert kv.num_cached_blocks == 3
    kv.check_invariants()


def test_prefix_caching_off_never_shares() -> None:
    kv = KVCacheManager(num_blocks=8, block_size=4, enable_prefix_caching=False)
    prompt = list(range(9))
    assert started(kv, "a", prompt) == 0
    assert kv.start("b", prompt) == 0
    assert (kv.num_cached_blocks, kv.prefix_queries_tokens, kv.prefix_hit_tokens) == (0, 0, 0)
    kv.free("a")
    assert (kv.num_free_blocks, kv.allocator.num_evictable) == (8, 0)


def test_freed_blocks_are_evicted_least_recently_used_first() -> None:
    kv = KVCacheManager(num_blocks=4, block_size=2)
    for seq_id, prompt in (("a", [1, 2]), ("b", [3, 4]), ("c", [5, 6])):
        started(kv, seq_id, prompt)
        kv.free(seq_id)
    assert (kv.num_free_blocks, kv.num_cached_blocks, kv.allocator.num_evictable) == (4, 3, 3)
    assert started(kv, "d", [1, 2, 9]) == 2  # uses block 0 again, so it becomes the newest
    assert kv.block_table("d") == [0, 3]
    kv.free("d")
    kv.start("e", [7, 8, 7, 8, 7, 8, 7, 8])
    kv.allocate("e", 2)  # the free list first: block 3
    kv.allocate("e", 4)  # then the oldest release: "b"'s block
    assert (kv.block_table("e"), kv.num_cached_blocks) == ([3, 1], 2)
    assert kv.start("f", [3, 4, 0]) == 0
    assert kv.start("g", [1, 2, 0]) == 2
    kv.free("g")
    kv.allocate("e", 8)
    assert (kv.block_table("e"), kv.num_cached_blocks) == ([3, 1, 2, 0], 0)
    kv.check_invariants()


def test_errors_name_the_sequence() -> None:
    kv = KVCacheManager(num_blocks=4, block_size=4)
    kv.start("a", [1])
    with pytest.raises(ValueError, match="sequence 'a' is already started"):
        kv.start("a", [1])
    with pytest.raises(ValueError, match="sequence 'b' has no tokens"):
        kv.start("b", [])
    with pytest.raises(ValueError, match="sequence 'b' is not started; call start first"):
        kv.allocate("b", 4)
    kv.free("a")
    with pytest.raises(ValueError, match=r"sequence 'a' is not started \(or was freed already\)"):
        kv.free("a")
    assert "a" not in kv


def test_slots_map_positions_to_physical_slots() -> None:
    kv = KVCacheManager(num_blocks=4, block_size=4)
    kv.start("x", [1])
    kv.allocate("x", 4)
    kv.start("a", [1])
    kv.allocate("a", 6)
    assert kv.block_table("a") == [1, 2]
    assert kv.slots("a", 2, 6) == [6, 7, 8, 9]
    assert kv.slots("a", 3, 3) == []
    with pytest.raises(ValueError, match="position 8 has no block; allocate first"):
        kv.slots("a", 0, 9)
    with pytest.raises(ValueError, match="0 <= start <= stop"):
        kv.slots("a", 3, 2)


def test_trim_keeps_sink_and_window_blocks_and_frees_the_middle() -> None:
    kv = KVCacheManager(num_blocks=16, block_size=4, sink_tokens=4, window_tokens=8)
    kv.start("a", list(range(30)))
    kv.allocate("a", 30)
    table = kv.block_table("a")
    assert kv.trim("a", 30) == 4  # sink: block 0; window 22..29: blocks 5..7
    assert kv.block_table("a") == [table[0]] + [DROPPED_BLOCK] * 4 + table[5:]
    assert kv.kept_positions("a") == [(0, 4), (20, 30)]
    assert (kv.num_used_blocks, kv.num_free_blocks) == (4, 12)
    assert kv.slots("a", 0, 2) == [table[0] * 4, table[0] * 4 + 1]
    assert kv.slots("a", 20, 21) == [table[5] * 4]
    with pytest.raises(ValueError, match="position 4 was dropped by the sliding window"):
        kv.slots("a", 3, 5)
    assert kv.trim("a", 30) == 0
    kv.allocate("a", 34)
    assert kv.trim("a", 34) == 1  # window 26..33: blocks 6..8
    assert kv.kept_positions("a") == [(0, 4), (24, 34)]
    kv.check_invariants()
    kv.free("a")
    assert kv.num_free_blocks == 16
    kv.check_invariants()


@pytest.mark.parametrize(("sink_tokens", "window_tokens", "num_tokens", "kept_blocks"), [
    (5, 6, 20, [0, 1, 3, 4]),  # sinks 0..4 touch blocks 0-1; window 14..19 touches blocks 3-4
    (0, 4, 20, [4]),
    (0, 8, 6, [0, 1]),  # shorter than the window: nothing to drop
    (16, 4, 20, [0, 1, 2, 3, 4]),
])
def test_trim_is_block_granular(sink_tokens: int, window_tokens: int, num_tokens: int,
                                kept_blocks: list[int]) -> None:
    kv = KVCacheManager(num_blocks=8, block_size=4, sink_tokens=sink_tokens, window_tokens=window_tokens)
    kv.start("a", [0] * num_tokens)
    kv.allocate("a", num_tokens)
    num_blocks = len(kv.block_table("a"))
    assert kv.trim("a", num_tokens) == num_blocks - len(kept_blocks)
    assert [i for i, b in enumerate(kv.block_table("a")) if b != DROPPED_BLOCK] == kept_blocks
    kv.check_invariants()


def test_trim_needs_a_window_and_stops_caching() -> None:
    with pytest.raises(ValueError, match="trim needs a sliding window"):
        KVCacheManager(num_blocks=4, block_size=4).trim("a", 4)
    kv = KVCacheManager(num_blocks=16, block_size=4, window_tokens=4)
    tokens = list(range(16))
    kv.start("a", tokens[:8])
    kv.allocate("a", 8)
    kv.commit("a", tokens[:8])
    assert kv.trim("a", 8) == 1
    kv.allocate("a", 16)
    kv.commit("a", tokens)  # computed over a cut context: not for other sequences
    assert kv.num_cached_blocks == 2
    with pytest.raises(ValueError, match="num_tokens=17 is outside its blocks"):
        kv.trim("a", 17)


def test_check_invariants_catches_a_refcount_without_a_reference() -> None:
    kv = KVCacheManager(num_blocks=4, block_size=4)
    started(kv, "a", list(range(5)))
    kv.allocator.acquire(kv.allocator.hash_of(0))  # a reference no block table holds
    with pytest.raises(KVAccountingError, match="block 0 has refcount 2 but 1 block-table references"):
        kv.check_invariants()


SOAK_VOCAB = 6  # tiny, so random suffixes collide and blocks repeat across prefixes


@pytest.mark.parametrize("config", [
    {"enable_prefix_caching": True},
    {"enable_prefix_caching": False},
    {"enable_prefix_caching": True, "sink_tokens": 4, "window_tokens": 16},
])
def test_random_soak_returns_every_block(config: dict) -> None:
    """5,000 sequences started, grown in chunks, committed, trimmed, finished or abandoned."""
    rng = random.Random(2026)
    kv = KVCacheManager(num_blocks=48, block_size=4, **config)
    prefixes = [[rng.randrange(SOAK_VOCAB) for _ in range(rng.randrange(1, 24))] for _ in range(6)]
    written: dict[int, tuple[int, ...]] = {}  # slot -> the token ids up to and including its own
    live: dict[str, list] = {}  # seq id -> [token ids, computed tokens, target length]
    num_started = num_ops = 0
    while num_started < 5000 or live:
        num_ops += 1
        if num_started < 5000 and (len(live) < 3 or rng.random() < 0.15):
            seq_id, num_started = f"s{num_started}", num_started + 1
            prompt = rng.choice(prefixes) + [rng.randrange(SOAK_VOCAB) for _ in range(rng.randrange(0, 12))]
            cached = _start_and_check(kv, seq_id, prompt, written)
            live[seq_id] = [prompt, cached, len(prompt) + rng.randrange(1, 20)]
        else:
            seq_id = rng.choice(sorted(live))
            if not _step(kv, seq_id, live[seq_id], rng, written) or rng.random() < 0.02:
                kv.free(seq_id)  # finished, preempted or cancelled: all alike to the cache
                del live[seq_id]
        if num_ops % 200 == 0:
            kv.check_invariants()
    kv.check_invariants()
    assert (kv.num_free_blocks, kv.num_used_blocks) == (48, 0)
    assert kv.allocator.num_evictable == kv.num_cached_blocks
    if config["enable_prefix_caching"]:
        assert kv.prefix_hit_tokens > 0


def _start_and_check(kv: KVCacheManager, seq_id: str, prompt: list[int], written: dict) -> int:
    cached = kv.start(seq_id, prompt)
    assert cached % kv.block_size == 0 and 0 <= cached < len(prompt)
    for position, slot in enumerate(kv.slots(seq_id, 0, cached)):  # a hit holds this very prefix
        assert written[slot] == tuple(prompt[: position + 1])
    return cached


def _step(kv: KVCacheManager, seq_id: str, state: list, rng: random.Random, written: dict) -> bool:
    """One engine step for the sequence; False when it is done or its blocks ran out."""
    token_ids, computed, target = state
    if computed == len(token_ids):  # decoding: the token sampled last step is computed now
        if len(token_ids) >= target:
            return False
        token_ids.append(rng.randrange(SOAK_VOCAB))
    num_tokens = min(len(token_ids), computed + rng.randint(1, 8))
    if not kv.allocate(seq_id, num_tokens):
        return False
    for position, slot in zip(range(computed, num_tokens), kv.slots(seq_id, computed, num_tokens)):
        assert kv.allocator.refcount(slot // kv.block_size) == 1  # never write into a shared block
        written[slot] = tuple(token_ids[: position + 1])  # the "KV" of this position
    kv.commit(seq_id, token_ids[:num_tokens])
    if kv.window_tokens is not None:
        kv.trim(seq_id, num_tokens)
    state[1] = num_tokens
    return True

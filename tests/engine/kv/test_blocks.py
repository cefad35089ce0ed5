"""BlockAllocator: free list, refcounts, the prefix cache and LRU eviction, with exact counts."""

from __future__ import annotations

import pytest

from mcp.engine.kv.blocks import HASH_SIZE, ROOT_HASH, BlockAllocator, KVAccountingError, block_hash


PINNED_HASH = "7077f7c78cbaa9547bb8ede0e304f4f3"  # b2sum -l 128 of 16 zero bytes + int64 LE 1, 2, 3, 4


def digest(tag: int) -> bytes:
    return block_hash(None, [tag])


def test_block_hash_is_stable_and_chains() -> None:
    first = block_hash(None, [1, 2, 3, 4])
    assert len(first) == HASH_SIZE
    assert first == block_hash(ROOT_HASH, [1, 2, 3, 4])  # None means "no parent"
    assert first.hex() == PINNED_HASH  # the same in every process and every release
    second = block_hash(first, [5, 6, 7, 8])
    assert second != block_hash(None, [5, 6, 7, 8])  # same tokens, different prefix
    assert second != block_hash(block_hash(None, [1, 2, 3, 5]), [5, 6, 7, 8])
    assert block_hash(None, [1, 2]) != block_hash(None, [2, 1])


def test_block_hash_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="parent_hash must be 16 bytes"):
        block_hash(b"short", [1])
    with pytest.raises(ValueError, match="fit in int64"):
        block_hash(None, [2**63])


@pytest.mark.parametrize(("num_blocks", "block_size", "message"), [
    (0, 16, "num_blocks must be positive"),
    (4, 0, "block_size must be positive"),
])
def test_constructor_rejects_bad_sizes(num_blocks: int, block_size: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        BlockAllocator(num_blocks, block_size)


def test_allocate_and_free_count_exactly() -> None:
    allocator = BlockAllocator(4, 16)
    assert allocator.allocate(3) == [0, 1, 2]
    assert (allocator.num_free, allocator.num_used) == (1, 3)
    assert [allocator.refcount(b) for b in range(4)] == [1, 1, 1, 0]
    allocator.free(1)
    assert (allocator.num_free, allocator.num_used) == (2, 2)
    assert allocator.allocate(2) == [1, 3]  # last in, first out: a freed block is reused first
    allocator.check_invariants()


def test_asking_for_too_many_blocks_raises_and_changes_nothing() -> None:
    allocator = BlockAllocator(4, 16)
    allocator.allocate(3)
    with pytest.raises(ValueError, match="asked for 2 KV blocks but only 1 of 4 are free"):
        allocator.allocate(2)
    with pytest.raises(ValueError, match="the pool holds only 4"):
        allocator.allocate(5)
    assert (allocator.num_free, allocator.num_used) == (1, 3)
    assert allocator.allocate(0) == []
    allocator.check_invariants()


def test_freeing_twice_raises() -> None:
    allocator = BlockAllocator(2, 16)
    [block_id] = allocator.allocate(1)
    allocator.free(block_id)
    with pytest.raises(ValueError, match="block 0 is already free; it was freed twice"):
        allocator.free(block_id)
    with pytest.raises(ValueError, match="block id 2 is out of range 0..1"):
        allocator.free(2)
    allocator.check_invariants()


def test_a_freed_cached_block_is_evictable_and_still_findable() -> None:
    allocator = BlockAllocator(2, 16)
    [block_id] = allocator.allocate(1)
    assert allocator.register(block_id, digest(1))
    allocator.free(block_id)
    assert (allocator.num_free, allocator.num_used, allocator.num_evictable, allocator.num_cached) == (2, 0, 1, 1)
    assert allocator.lookup(digest(1)) == block_id
    assert allocator.acquire(digest(1)) == block_id  # a hit takes it out of the LRU
    assert (allocator.refcount(block_id), allocator.num_used, allocator.num_evictable) == (1, 1, 0)
    assert allocator.acquire(digest(1)) == block_id  # a second holder
    assert allocator.refcount(block_id) == 2
    assert allocator.acquire(digest(2)) is None
    allocator.check_invariants()


def test_the_free_list_goes_before_evictable_blocks() -> None:
    allocator = BlockAllocator(3, 16)
    cached, plain = allocator.allocate(2)
    allocator.register(cached, digest(1))
    allocator.free(cached)
    allocator.free(plain)
    assert allocator.allocate(2) == [plain, 2]
    assert allocator.lookup(digest(1)) == cached  # not evicted while free blocks remained
    assert allocator.allocate(1) == [cached]
    assert allocator.lookup(digest(1)) is None
    assert (allocator.hash_of(cached), allocator.num_cached) == (None, 0)
    allocator.check_invariants()


def test_eviction_takes_the_least_recently_released_block() -> None:
    allocator = BlockAllocator(4, 16)
    for block_id in allocator.allocate(4):
        allocator.register(block_id, digest(block_id))
    for block_id in (2, 0, 3, 1):
        allocator.free(block_id)
    assert allocator.allocate(1) == [2]
    assert allocator.lookup(digest(2)) is None
    allocator.acquire(digest(0))  # used again: out of the LRU ...
    allocator.free(0)  # ... and back as the most recent
    assert allocator.allocate(3) == [3, 1, 0]
    assert allocator.num_cached == 0
    allocator.check_invariants()


def test_register_keeps_the_first_block_of_a_hash() -> None:
    allocator = BlockAllocator(3, 16)
    first, second, other = allocator.allocate(3)
    assert allocator.register(first, digest(1))
    assert not allocator.register(second, digest(1))
    assert allocator.hash_of(second) is None
    assert allocator.register(first, digest(1))  # again under its own hash: a no-op
    with pytest.raises(ValueError, match="already cached under another hash"):
        allocator.register(first, digest(2))
    allocator.free(second)  # uncached: straight back to the free list
    assert (allocator.num_evictable, allocator.num_free) == (0, 1)
    allocator.free(other)
    with pytest.raises(ValueError, match="block 2 is not allocated"):
        allocator.register(other, digest(3))
    allocator.check_invariants()


def test_check_invariants_catches_a_block_in_two_places() -> None:
    allocator = BlockAllocator(3, 16)
    allocator.allocate(1)
    allocator._free.append(0)  # corrupt on purpose: block 0 is held and on the free list
    with pytest.raises(KVAccountingError, match=r"blocks \[0\] are held and free"):
        allocator.check_invariants()

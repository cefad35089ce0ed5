"""A fixed pool of KV blocks: free list, refcounts and a prefix cache of full blocks.

Every block is in exactly one of three places:

- **free**: refcount 0, no hash; handed out first.
- **used**: refcount > 0, held by one or more block tables (shared prefixes count once each).
- **evictable**: refcount 0 but full and hashed, so a later sequence with the same prefix can
  still find it; kept in least-recently-released order and reclaimed, oldest first, only when
  the free list is empty.

The prefix cache maps a block hash to the block holding those tokens. Hashes chain
(``block_hash(parent_hash, token_ids)``), so a block's hash names its whole prefix, not just its
own tokens. Nothing here knows about sequences; ``manager.py`` builds block tables on top.
"""

from __future__ import annotations

import hashlib
import struct
from collections import OrderedDict, deque
from collections.abc import Sequence

HASH_SIZE = 16  # bytes of a block hash (blake2b digest size)
ROOT_HASH = bytes(HASH_SIZE)  # the parent of a sequence's first block


def block_hash(parent_hash: bytes | None, token_ids: Sequence[int]) -> bytes:
    """The stable hash of a block of ``token_ids`` following the block hashed ``parent_hash``.

    blake2b over the parent digest (``ROOT_HASH`` for the first block) and the token ids packed
    as little-endian int64. Every message starts with a fixed-size digest, so the same tokens
    after a different prefix hash differently, and the result is the same in every process.
    """
    parent = ROOT_HASH if parent_hash is None else parent_hash
    if len(parent) != HASH_SIZE:
        raise ValueError(f"parent_hash must be {HASH_SIZE} bytes (a block_hash result), got {len(parent)}")
    try:
        packed = struct.pack(f"<{len(token_ids)}q", *token_ids)
    except struct.error as exc:
        raise ValueError(f"token ids must be integers that fit in int64 ({exc})") from None
    return hashlib.blake2b(parent + packed, digest_size=HASH_SIZE).digest()


class BlockAllocator:
    """``num_blocks`` blocks of ``block_size`` token slots each, with exact accounting."""

    def __init__(self, num_blocks: int, block_size: int) -> None:
        if num_blocks <= 0:
            raise ValueError(f"num_blocks must be positive, got {num_blocks}")
        if block_size <= 0:
            raise ValueError(f"block_size must be positive, got {block_size}")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self._refcounts = [0] * num_blocks  # [num_blocks] block-table references
        self._hashes: list[bytes | None] = [None] * num_blocks  # [num_blocks] set once full and cached
        # Handed out from the front; a freed block goes back to the front (last in, first out):
        # the blocks in use stay few and warm, and a lazily zeroed cache touches only as many
        # pages as the peak load needed, not all of them in turn.
        self._free: deque[int] = deque(range(num_blocks))
        self._evictable: OrderedDict[int, None] = OrderedDict()  # oldest release first
        self._cache: dict[bytes, int] = {}  # block hash -> block id
        self._num_used = 0

    # -- accounting -----------------------------------------------------------------------
    @property
    def num_free(self) -> int:
        """Blocks ``allocate`` can hand out now: the free list plus evictable cached blocks."""
        return len(self._free) + len(self._evictable)

    @property
    def num_used(self) -> int:
        """Blocks with refcount > 0."""
        return self._num_used

    @property
    def num_evictable(self) -> int:
        """Cached blocks nobody holds; reclaimed oldest first when the free list runs out."""
        return len(self._evictable)

    @property
    def num_cached(self) -> int:
        """Blocks in the prefix cache, held or evictable."""
        return len(self._cache)

    def refcount(self, block_id: int) -> int:
        """How many block tables hold ``block_id``."""
        return self._refcounts[self._checked(block_id)]

    def hash_of(self, block_id: int) -> bytes | None:
        """The prefix-cache hash of ``block_id``, or None when it is not cached."""
        return self._hashes[self._checked(block_id)]

    # -- operations -----------------------------------------------------------------------
    def allocate(self, num_blocks: int = 1) -> list[int]:
        """Hand out ``num_blocks`` blocks, each with refcount 1.

        Takes the free list first, then evicts the least recently released cached blocks
        (their hashes leave the cache). Raises ValueError, changing nothing, when fewer than
        ``num_blocks`` blocks are free.
        """
        if num_blocks < 0:
            raise ValueError(f"num_blocks must be >= 0, got {num_blocks}")
        if num_blocks > self.num_blocks:
            raise ValueError(f"asked for {num_blocks} KV blocks but the pool holds only {self.num_blocks}; "
                             "raise num_blocks or ask for fewer")
        if num_blocks > self.num_free:
            raise ValueError(f"asked for {num_blocks} KV blocks but only {self.num_free} of {self.num_blocks} "
                             "are free; free a sequence first")
        return [self._take_one() for _ in range(num_blocks)]

    def _take_one(self) -> int:
        if self._free:
            block_id = self._free.popleft()
        else:
            block_id, _ = self._evictable.popitem(last=False)
            del self._cache[self._hashes[block_id]]
            self._hashes[block_id] = None
        self._refcounts[block_id] = 1
        self._num_used += 1
        return block_id

    def lookup(self, digest: bytes) -> int | None:
        """The cached block with hash ``digest``, or None; changes nothing."""
        return self._cache.get(digest)

    def acquire(self, digest: bytes) -> int | None:
        """Take one more reference on the cached block ``digest`` (None on a miss).

        An evictable block leaves the eviction order and counts as used again.
        """
        block_id = self._cache.get(digest)
        if block_id is None:
            return None
        if self._refcounts[block_id] == 0:
            del self._evictable[block_id]
            self._num_used += 1
        self._refcounts[block_id] += 1
        return block_id

    def register(self, block_id: int, digest: bytes) -> bool:
        """Put the full, held block ``block_id`` in the prefix cache under ``digest``.

        Returns False, changing nothing, when another block is already cached under ``digest``
        (the caller keeps its own block; it just is not findable). Registering a block again
        under its own hash is a no-op that returns True.
        """
        self._checked(block_id)
        if self._refcounts[block_id] == 0:
            raise ValueError(f"block {block_id} is not allocated; only a held block can be cached")
        current = self._hashes[block_id]
        if current is not None:
            if current != digest:
                raise ValueError(f"block {block_id} is already cached under another hash; a block holds one prefix")
            return True
        if digest in self._cache:
            return False
        self._hashes[block_id] = digest
        self._cache[digest] = block_id
        return True

    def free(self, block_id: int) -> None:
        """Drop one reference to ``block_id``.

        At refcount 0 a cached block becomes evictable (most recently released last); any
        other block goes back to the free list. Raises ValueError for a block that is
        already free (freed twice).
        """
        self._checked(block_id)
        if self._refcounts[block_id] == 0:
            raise ValueError(f"block {block_id} is already free; it was freed twice")
        self._refcounts[block_id] -= 1
        if self._refcounts[block_id] > 0:
            return
        self._num_used -= 1
        if self._hashes[block_id] is None:
            self._free.appendleft(block_id)
        else:
            self._evictable[block_id] = None

    def check_invariants(self) -> None:
        """Raise ``KVAccountingError`` when a block is in two places or the counts do not add up."""
        check = require_accounting
        free, evictable = set(self._free), set(self._evictable)
        used = {b for b, count in enumerate(self._refcounts) if count > 0}
        check(len(free) == len(self._free), "a block is on the free list twice")
        check(not free & evictable, f"blocks {sorted(free & evictable)} are free and evictable")
        check(not used & (free | evictable), f"blocks {sorted(used & (free | evictable))} are held and free")
        check(len(used) == self._num_used, f"{len(used)} blocks are held, num_used says {self._num_used}")
        total = len(free) + len(evictable) + len(used)
        check(total == self.num_blocks, f"free + evictable + used = {total}, not {self.num_blocks}")
        check(min(self._refcounts) >= 0, "a refcount is negative")
        check(all(self._hashes[b] is None for b in free), "a block on the free list still has a hash")
        check(all(self._hashes[b] is not None for b in evictable), "an evictable block has no hash")
        hashed = {h: b for b, h in enumerate(self._hashes) if h is not None}
        check(self._cache == hashed, "the prefix cache and the block hashes disagree")

    def _checked(self, block_id: int) -> int:
        if not 0 <= block_id < self.num_blocks:
            raise ValueError(f"block id {block_id} is out of range 0..{self.num_blocks - 1}")
        return block_id


class KVAccountingError(RuntimeError):
    """The block accounting is inconsistent: a bug in the KV cache code, never bad input."""


def require_accounting(condition: bool, message: str) -> None:
    """Raise ``KVAccountingError`` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise KVAccountingError(f"KV block accounting is broken: {message}")

"""Per-sequence block tables over a ``BlockAllocator``: the paged KV cache's bookkeeping.

A sequence's block table maps its logical block i (token positions i*block_size ..
(i+1)*block_size - 1) to a physical block; token position p lives in slot
``block_table[p // block_size] * block_size + p % block_size``. The scheduler drives it:

``start`` (reuse cached prefix blocks) -> ``allocate`` before each step -> the model writes the
step's KV -> ``commit`` (cache the newly full blocks) -> ... -> ``free`` when the sequence ends,
whatever ends it. With a sliding window, ``trim`` drops the blocks between the attention sinks
and the window, and ``kept_positions`` tells the attention mask what is left.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from mcp.engine.kv.blocks import BlockAllocator, block_hash, require_accounting

DROPPED_BLOCK = -1  # block-table entry of a block the window policy freed


@dataclass
class _SequenceBlocks:
    block_ids: list[int] = field(default_factory=list)  # [num logical blocks] physical id or DROPPED_BLOCK
    hashes: list[bytes] = field(default_factory=list)  # hash chain of the first len(hashes) (full) blocks
    num_tokens: int = 0  # token positions the table holds: the most ``allocate`` was asked for
    dropped_until: int = 0  # logical blocks [sink blocks, dropped_until) were freed by ``trim``


class KVCacheManager:
    """Block tables for live sequences, with prefix sharing and an optional sliding window.

    ``allocator`` is public for inspection (refcounts, hashes); change blocks only through
    this class so the tables and refcounts stay in step.
    """

    def __init__(self, num_blocks: int, block_size: int, enable_prefix_caching: bool = True,
                 sink_tokens: int = 0, window_tokens: int | None = None, exact_window: bool = False) -> None:
        _validate(num_blocks, block_size, sink_tokens, window_tokens)
        self.allocator = BlockAllocator(num_blocks, block_size)
        self.enable_prefix_caching = enable_prefix_caching
        self.sink_tokens = sink_tokens
        self.window_tokens = window_tokens
        # exact_window: the model's own layers attend through this window (Gemma 3's local
        # layers), so a block's KV does not depend on the blocks trimmed before it and stays
        # cacheable after a trim; otherwise the window is a policy cutting the context.
        self.exact_window = exact_window
        self._seqs: dict[str, _SequenceBlocks] = {}
        self._num_prefix_queries_tokens = 0
        self._num_prefix_hit_tokens = 0

    # -- accounting -----------------------------------------------------------------------
    @property
    def num_blocks(self) -> int:
        return self.allocator.num_blocks

    @property
    def block_size(self) -> int:
        return self.allocator.block_size

    @property
    def num_free_blocks(self) -> int:
        """Blocks allocatable now: the free list plus evictable cached blocks."""
        return self.allocator.num_free

    @property
    def num_used_blocks(self) -> int:
        """Blocks held by at least one sequence."""
        return self.allocator.num_used

    @property
    def num_cached_blocks(self) -> int:
        """Blocks findable in the prefix cache, held or evictable."""
        return self.allocator.num_cached

    @property
    def usage(self) -> float:
        """Fraction of blocks held by sequences (``kv_cache_usage_perc``), 0..1."""
        return self.allocator.num_used / self.allocator.num_blocks

    @property
    def prefix_queries_tokens(self) -> int:
        """Prompt tokens looked up in the prefix cache by ``start`` (0 when caching is off)."""
        return self._num_prefix_queries_tokens

    @property
    def prefix_hit_tokens(self) -> int:
        """Prompt tokens ``start`` found cached and reused."""
        return self._num_prefix_hit_tokens

    @property
    def trims(self) -> bool:
        """Whether the scheduler calls ``trim`` after each step (a window is set)."""
        return self.window_tokens is not None

    def __contains__(self, seq_id: str) -> bool:
        return seq_id in self._seqs

    # -- a sequence's life ----------------------------------------------------------------
    def start(self, seq_id: str, token_ids: Sequence[int], max_cached_tokens: int | None = None) -> int:
        """Register ``seq_id`` with prompt ``token_ids``; return how many tokens are computed.

        With prefix caching on, the table starts with the cached full blocks of the prompt's
        prefix (one more reference each), at most ``max_cached_tokens`` of them. The count is a
        multiple of block_size and always below len(token_ids), so at least one token is left
        to compute (the model needs it to produce logits): a fully cached prompt backs off one
        block. With caching off it is 0.
        """
        if seq_id in self._seqs:
            raise ValueError(f"sequence {seq_id!r} is already started; free it before starting it again")
        if not token_ids:
            raise ValueError(f"sequence {seq_id!r} has no tokens; a sequence needs at least one")
        seq = _SequenceBlocks()
        if self.enable_prefix_caching:
            seq.hashes = self._cached_prefix(token_ids)
            if max_cached_tokens is not None:
                del seq.hashes[max_cached_tokens // self.block_size:]
            seq.block_ids = [self.allocator.acquire(digest) for digest in seq.hashes]
            seq.num_tokens = len(seq.block_ids) * self.block_size
            self._num_prefix_queries_tokens += len(token_ids)
            self._num_prefix_hit_tokens += seq.num_tokens
        self._seqs[seq_id] = seq
        return seq.num_tokens

    def cached_tokens(self, token_ids: Sequence[int]) -> int:
        """How many tokens ``start`` would find cached for ``token_ids`` now; changes nothing."""
        return len(self._cached_prefix(token_ids)) * self.block_size if self.enable_prefix_caching else 0

    def _cached_prefix(self, token_ids: Sequence[int]) -> list[bytes]:
        """Hashes of the leading full blocks found in the cache, leaving >= 1 token uncached."""
        size, hashes, parent = self.block_size, [], None
        for i in range((len(token_ids) - 1) // size):
            parent = block_hash(parent, token_ids[i * size:(i + 1) * size])
            if self.allocator.lookup(parent) is None:
                break
            hashes.append(parent)
        return hashes

    def blocks_needed(self, seq_id: str, num_tokens: int) -> int:
        """New blocks ``seq_id`` needs to hold ``num_tokens`` tokens in all (from zero if unknown)."""
        if num_tokens < 0:
            raise ValueError(f"num_tokens must be >= 0, got {num_tokens}")
        seq = self._seqs.get(seq_id)
        num_held = len(seq.block_ids) if seq is not None else 0
        return max(0, -(-num_tokens // self.block_size) - num_held)

    def peak_blocks(self, num_tokens: int, max_step_tokens: int) -> int:
        """The most blocks a sequence of ``num_tokens`` tokens holds at once when each step
        adds at most ``max_step_tokens``: all of them, or with a sliding window its sinks, its
        window and one step's worth (trimmed after each step)."""
        every = -(-num_tokens // self.block_size)
        if self.window_tokens is None:
            return every
        bounded = self._num_sink_blocks() + -(-(self.window_tokens + max_step_tokens) // self.block_size) + 1
        return min(every, bounded)

    def can_hold(self, num_tokens: int, max_step_tokens: int) -> bool:
        """Whether a sequence of ``num_tokens`` tokens fits in the whole cache at its peak."""
        return self.peak_blocks(num_tokens, max_step_tokens) <= self.num_blocks

    def can_allocate(self, seq_id: str, num_tokens: int) -> bool:
        """True when ``allocate(seq_id, num_tokens)`` would succeed now."""
        return self.blocks_needed(seq_id, num_tokens) <= self.allocator.num_free

    def allocate(self, seq_id: str, num_tokens: int) -> bool:
        """Grow the table of ``seq_id`` to hold ``num_tokens`` tokens in total.

        ``num_tokens`` is the computed tokens plus this step's new ones. Returns False and
        changes nothing when the free plus evictable blocks are too few. Never shrinks.
        """
        seq = self._get(seq_id)
        num_new = self.blocks_needed(seq_id, num_tokens)
        if num_new > self.allocator.num_free:
            return False
        seq.block_ids.extend(self.allocator.allocate(num_new))
        seq.num_tokens = max(seq.num_tokens, num_tokens)
        return True

    def commit(self, seq_id: str, token_ids: Sequence[int]) -> None:
        """Record that the KV of ``token_ids`` (all the sequence's tokens so far) is computed.

        Every newly full block enters the prefix cache under its chained hash. When another
        block is already cached under that hash, the sequence keeps its own block, uncached.
        Once ``trim`` has dropped a block, later blocks are not cached: their KV was computed
        over a cut context and would be wrong for a sequence that attends to everything (unless
        the window is exact: the model's own).
        """
        seq = self._get(seq_id)
        if len(token_ids) > len(seq.block_ids) * self.block_size:
            raise ValueError(f"sequence {seq_id!r}: {len(token_ids)} tokens committed but its blocks hold "
                             f"{len(seq.block_ids) * self.block_size}; allocate before the step")
        if not self.enable_prefix_caching or (seq.dropped_until > 0 and not self.exact_window):
            return
        size, parent = self.block_size, seq.hashes[-1] if seq.hashes else None
        for i in range(len(seq.hashes), len(token_ids) // size):
            parent = block_hash(parent, token_ids[i * size:(i + 1) * size])
            seq.hashes.append(parent)
            if seq.block_ids[i] != DROPPED_BLOCK:
                self.allocator.register(seq.block_ids[i], parent)

    def free(self, seq_id: str) -> None:
        """Release every block of ``seq_id`` and forget it.

        Cached blocks become evictable, the rest go back to the free list. Blocks are released
        tail first, so a sequence's tail is evicted before the prefix others may share.
        """
        seq = self._seqs.pop(seq_id, None)
        if seq is None:
            raise ValueError(f"sequence {seq_id!r} is not started (or was freed already)")
        for block_id in reversed(seq.block_ids):
            if block_id != DROPPED_BLOCK:
                self.allocator.free(block_id)

    # -- where tokens live ----------------------------------------------------------------
    def block_table(self, seq_id: str) -> list[int]:
        """Physical block id of each logical block; ``DROPPED_BLOCK`` (-1) where trimmed."""
        return list(self._get(seq_id).block_ids)

    def slots(self, seq_id: str, start: int, stop: int) -> list[int]:
        """Physical slots [stop - start] of token positions start..stop-1.

        Raises ValueError for a position whose block was dropped by the window or never
        allocated.
        """
        if not 0 <= start <= stop:
            raise ValueError(f"slots needs 0 <= start <= stop, got start={start}, stop={stop}")
        block_ids, size = self._get(seq_id).block_ids, self.block_size
        if stop > len(block_ids) * size:
            raise ValueError(f"sequence {seq_id!r}: position {stop - 1} has no block; allocate first")
        slot_ids = []
        for position in range(start, stop):
            block_id = block_ids[position // size]
            if block_id == DROPPED_BLOCK:
                raise ValueError(f"sequence {seq_id!r}: position {position} was dropped by the sliding window")
            slot_ids.append(block_id * size + position % size)
        return slot_ids

    # -- sliding window with attention sinks ----------------------------------------------
    def trim(self, seq_id: str, num_tokens: int) -> int:
        """Free the blocks of a ``num_tokens``-token sequence outside its sinks and window.

        A block is kept when it holds any of the first ``sink_tokens`` tokens or any of the
        last ``window_tokens``; the blocks in between are freed. Returns how many were freed.
        """
        if self.window_tokens is None:
            raise ValueError("trim needs a sliding window; construct the manager with window_tokens")
        seq = self._get(seq_id)
        if not 0 <= num_tokens <= len(seq.block_ids) * self.block_size:
            raise ValueError(f"sequence {seq_id!r}: num_tokens={num_tokens} is outside its blocks "
                             f"(0..{len(seq.block_ids) * self.block_size})")
        first = self._num_sink_blocks()
        stop = max(0, num_tokens - self.window_tokens) // self.block_size  # first block with a window token
        num_freed = 0
        for i in range(max(first, seq.dropped_until), stop):
            self.allocator.free(seq.block_ids[i])
            seq.block_ids[i] = DROPPED_BLOCK
            num_freed += 1
        if num_freed:
            seq.dropped_until = stop
        return num_freed

    def kept_positions(self, seq_id: str) -> list[tuple[int, int]]:
        """Token ranges [start, stop) the sequence still holds, in order, for the attention mask."""
        seq = self._get(seq_id)
        if seq.dropped_until == 0:
            return [(0, seq.num_tokens)] if seq.num_tokens else []
        sink_stop = self._num_sink_blocks() * self.block_size
        ranges = [(0, sink_stop), (seq.dropped_until * self.block_size, seq.num_tokens)]
        return [(lo, hi) for lo, hi in ranges if lo < hi]

    def _num_sink_blocks(self) -> int:
        return -(-self.sink_tokens // self.block_size)

    # -- checks ---------------------------------------------------------------------------
    def check_invariants(self) -> None:
        """Raise ``KVAccountingError`` when refcounts differ from the block-table references,
        free + used + evictable != total, or a block is in two places."""
        self.allocator.check_invariants()
        references: Counter[int] = Counter()
        for seq_id, seq in self._seqs.items():
            held = [b for b in seq.block_ids if b != DROPPED_BLOCK]
            require_accounting(len(set(held)) == len(held), f"sequence {seq_id!r} holds a block twice")
            references.update(held)
        for block_id in range(self.num_blocks):
            refcount = self.allocator.refcount(block_id)
            require_accounting(refcount == references[block_id], f"block {block_id} has refcount {refcount} "
                               f"but {references[block_id]} block-table references")

    def _get(self, seq_id: str) -> _SequenceBlocks:
        seq = self._seqs.get(seq_id)
        if seq is None:
            raise ValueError(f"sequence {seq_id!r} is not started; call start first")
        return seq


def _validate(num_blocks: int, block_size: int, sink_tokens: int, window_tokens: int | None) -> None:
    if block_size <= 0:
        raise ValueError(f"block_size must be positive, got {block_size}")
    if num_blocks <= 0:
        raise ValueError(f"num_blocks must be positive, got {num_blocks}")
    if sink_tokens < 0:
        raise ValueError(f"sink_tokens must be >= 0, got {sink_tokens}")
    if window_tokens is not None and window_tokens < block_size:
        raise ValueError(f"window_tokens must be at least block_size ({block_size}), got {window_tokens}")

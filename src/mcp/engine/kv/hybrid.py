"""KV blocks for a model whose layers attend differently: Gemma 3's local layers see only the
last ``sliding_window`` positions, its global layers every position.

Two pools, each with its own blocks and block tables (``KVCacheManager``): ``full`` holds every
position of a sequence for the global layers (under the configured sink/window policy, if any),
``local`` only the blocks that hold a position some later query can still see. The local pool's
window is exact (the model's own attention), so it is trimmed after every step and its blocks
stay prefix-cacheable after a trim. A sequence's memory on the local layers is bounded by the
window plus one step's tokens, whatever its length; only the global layers grow with the context.

``HybridKVCacheManager`` gives the scheduler the ``KVCacheManager`` operations it uses, each done
on both pools: an allocation succeeds only when both have room, a prefix hit is the shorter of
the two pools' hits. ``HybridKVStorage`` gives each model layer its pool's ``PagedLayer``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mcp.engine.kv.manager import KVCacheManager
from mcp.engine.kv.paged import PagedKVStorage, PagedLayer


class HybridKVCacheManager:
    """Block tables in two pools, ``full`` (every position) and ``local`` (an exact window)."""

    def __init__(self, full: KVCacheManager, local: KVCacheManager) -> None:
        if local.window_tokens is None or not local.exact_window:
            raise ValueError("the local pool needs the model's sliding window: window_tokens set, exact_window=True")
        if local.block_size != full.block_size:
            raise ValueError(f"both pools need one block size, got {full.block_size} and {local.block_size}")
        self.full, self.local = full, local

    # -- accounting: both pools together ------------------------------------------------
    @property
    def block_size(self) -> int:
        return self.full.block_size

    @property
    def num_blocks(self) -> int:
        return self.full.num_blocks + self.local.num_blocks

    @property
    def num_free_blocks(self) -> int:
        return self.full.num_free_blocks + self.local.num_free_blocks

    @property
    def num_used_blocks(self) -> int:
        return self.full.num_used_blocks + self.local.num_used_blocks

    @property
    def num_cached_blocks(self) -> int:
        return self.full.num_cached_blocks + self.local.num_cached_blocks

    @property
    def usage(self) -> float:
        """The fuller pool's fraction of blocks held: the one that stops the next sequence."""
        return max(self.full.usage, self.local.usage)

    @property
    def prefix_queries_tokens(self) -> int:
        return self.full.prefix_queries_tokens

    @property
    def prefix_hit_tokens(self) -> int:
        return self.full.prefix_hit_tokens

    @property
    def trims(self) -> bool:
        return True  # the local pool, after every step

    def __contains__(self, seq_id: str) -> bool:
        return seq_id in self.full

    # -- a sequence's life, on both pools --------------------------------------------------
    def start(self, seq_id: str, token_ids: Sequence[int]) -> int:
        """Register ``seq_id`` in both pools from the prefix both hold cached; see KVCacheManager.start."""
        cached = min(self.full.cached_tokens(token_ids), self.local.cached_tokens(token_ids))
        self.full.start(seq_id, token_ids, cached)
        self.local.start(seq_id, token_ids, cached)
        return cached

    def can_hold(self, num_tokens: int, max_step_tokens: int) -> bool:
        return self.full.can_hold(num_tokens, max_step_tokens) and self.local.can_hold(num_tokens, max_step_tokens)

    def can_allocate(self, seq_id: str, num_tokens: int) -> bool:
        return self.full.can_allocate(seq_id, num_tokens) and self.local.can_allocate(seq_id, num_tokens)

    def allocate(self, seq_id: str, num_tokens: int) -> bool:
        """Grow both tables, or neither (False) when either pool lacks the blocks."""
        if not self.can_allocate(seq_id, num_tokens):
            return False
        return self.full.allocate(seq_id, num_tokens) and self.local.allocate(seq_id, num_tokens)

    def commit(self, seq_id: str, token_ids: Sequence[int]) -> None:
        self.full.commit(seq_id, token_ids)
        self.local.commit(seq_id, token_ids)

    def trim(self, seq_id: str, num_tokens: int) -> int:
        """Free the local blocks behind the window (and the full pool's, under a window policy)."""
        freed = self.local.trim(seq_id, num_tokens)
        return freed + (self.full.trim(seq_id, num_tokens) if self.full.trims else 0)

    def free(self, seq_id: str) -> None:
        self.full.free(seq_id)
        self.local.free(seq_id)

    # -- where tokens live ------------------------------------------------------------------
    def block_table(self, seq_id: str) -> list[int]:
        """The global layers' table."""
        return self.full.block_table(seq_id)

    def local_table(self, seq_id: str) -> list[int]:
        """The local layers' table: ``DROPPED_BLOCK`` (-1) behind the window."""
        return self.local.block_table(seq_id)

    def check_invariants(self) -> None:
        self.full.check_invariants()
        self.local.check_invariants()


@dataclass(frozen=True)
class PoolSizes:
    """Blocks of each pool within one KV budget."""

    full_blocks: int
    local_blocks: int


def split_budget(num_bytes: int, local_layers: Sequence[bool], window_tokens: int, block_size: int,
                 block_bytes_per_layer: int, max_num_seqs: int, max_step_tokens: int) -> PoolSizes:
    """Share ``num_bytes`` between the pools: the local pool gets what ``max_num_seqs`` sequences
    hold at their peak (window + one step), but never more than its layers' share of the budget
    (what it would have had without the window); the global layers get the rest."""
    num_local = sum(local_layers)
    num_full = len(local_layers) - num_local
    peak = -(-(window_tokens + max_step_tokens) // block_size) + 1  # KVCacheManager.peak_blocks
    local_bytes = min(max_num_seqs * peak * num_local * block_bytes_per_layer,
                      num_bytes * num_local // len(local_layers))
    local_blocks = local_bytes // (num_local * block_bytes_per_layer)
    full_blocks = (num_bytes - local_blocks * num_local * block_bytes_per_layer) // (num_full * block_bytes_per_layer)
    return PoolSizes(full_blocks, local_blocks)


class HybridKVStorage:
    """Each model layer's keys and values in its pool: ``layers[i]`` is ``local``'s for a
    windowed layer, ``full``'s for a global one (in layer order within each pool)."""

    def __init__(self, full: PagedKVStorage, local: PagedKVStorage, local_layers: Sequence[bool]) -> None:
        if (full.num_layers, local.num_layers) != (len(local_layers) - sum(local_layers), sum(local_layers)):
            raise ValueError(f"pools of {full.num_layers} global and {local.num_layers} local layers do not "
                             f"match the model's {len(local_layers) - sum(local_layers)} and {sum(local_layers)}")
        if (full.block_size, full.dtype) != (local.block_size, local.dtype):
            raise ValueError("both pools need one block size and one dtype")
        self.full, self.local = full, local
        self.local_layers = tuple(local_layers)
        globals_, locals_ = iter(full.layers), iter(local.layers)
        self.layers: list[PagedLayer] = [next(locals_) if windowed else next(globals_) for windowed in local_layers]

    @property
    def block_size(self) -> int:
        return self.full.block_size

    @property
    def dtype(self):
        return self.full.dtype

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    @property
    def num_kv_heads(self) -> int:
        return self.full.num_kv_heads

    @property
    def head_dim(self) -> int:
        return self.full.head_dim

    @property
    def num_bytes(self) -> int:
        return self.full.num_bytes + self.local.num_bytes

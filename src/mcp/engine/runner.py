"""One continuous-batching step on a paged KV cache: the scheduler's chunks in, logits out.

Each step the scheduler hands ``ModelRunner.execute`` one ``StepChunk`` per scheduled
sequence: a prefill chunk of its prompt, or its one newest token to decode. All the step's
tokens run through the linear layers together as one flattened batch [1, N, hidden];
attention runs per group (the decodes together, each prefill chunk alone, see
``layers/attention.py``) on keys gathered from the chunks' block tables. Which blocks a
sequence owns, and when a chunk samples, is the scheduler's and block manager's business.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch

from mcp.base.errors import ConfigError
from mcp.engine.kv.hybrid import HybridKVStorage, split_budget
from mcp.engine.kv.manager import DROPPED_BLOCK
from mcp.engine.kv.paged import PagedKVStorage
from mcp.engine.layers.attention import PagedAttentionInputs, paged_attention_inputs
from mcp.engine.models import sliding_window_layers
from mcp.engine.models.llama import LlamaForCausalLM
from mcp.engine.models.llama_step import NativeDecodeStep


@dataclass(frozen=True)
class StepChunk:
    """One sequence's tokens in a step: ``token_ids`` at positions start..start+len-1.

    ``block_table`` lists the sequence's physical blocks (block b holds positions
    b*block_size..) and covers at least start+len positions; positions before ``start``
    are already in the cache. An entry ``DROPPED_BLOCK`` (-1) is a block the sliding-window
    policy freed: its positions are hidden from attention. ``samples``: the chunk ends at
    the sequence's last known token, so the step returns logits for it. ``local_table``: over
    a ``HybridKVStorage``, the windowed layers' blocks in the local pool (``kv/hybrid.py``).
    """

    token_ids: Sequence[int]
    start: int
    block_table: Sequence[int]
    samples: bool
    local_table: Sequence[int] | None = None


def allocate_storage(model: LlamaForCausalLM, num_bytes: int, block_size: int,
                     dtype: torch.dtype | None = None) -> PagedKVStorage:
    """As many KV blocks for ``model`` as fit in ``num_bytes`` (zeroed as steps first use them),
    holding ``dtype`` (default: the model's activation dtype)."""
    arch, dtype = model.arch, dtype or model.dtype
    shape = (arch.num_layers, block_size, arch.num_kv_heads, arch.head_dim)
    num_blocks = PagedKVStorage.blocks_within(num_bytes, *shape, dtype)
    if num_blocks < 1:
        per_block = PagedKVStorage.bytes_per_block(*shape, dtype)
        raise ConfigError(f"a KV cache budget of {num_bytes} bytes holds no block of {block_size} tokens "
                          f"({per_block} bytes); raise the budget or lower the block size")
    return PagedKVStorage(arch.num_layers, num_blocks, block_size, arch.num_kv_heads, arch.head_dim,
                          dtype, model.embed_tokens.device)


def releases_window(model: torch.nn.Module, block_size: int) -> bool:
    """Whether ``model`` has both windowed and global layers, with a window of at least a block:
    its windowed layers then keep their KV in a pool of their own (``allocate_hybrid_storage``)."""
    windowed = sliding_window_layers(model.arch)
    return 0 < sum(windowed) < len(windowed) and model.arch.sliding_window >= block_size


def allocate_hybrid_storage(model: torch.nn.Module, num_bytes: int, block_size: int, dtype: torch.dtype,
                            max_num_seqs: int, max_step_tokens: int) -> HybridKVStorage:
    """``num_bytes`` of KV shared between a pool for the global layers (every position) and one
    for the windowed layers (the window and a step, per sequence): ``kv/hybrid.py``."""
    arch, windowed = model.arch, sliding_window_layers(model.arch)
    per_layer = PagedKVStorage.bytes_per_block(1, block_size, arch.num_kv_heads, arch.head_dim, dtype)
    sizes = split_budget(num_bytes, windowed, arch.sliding_window, block_size, per_layer, max_num_seqs,
                         max_step_tokens)
    if sizes.full_blocks < 1 or sizes.local_blocks < 1:
        raise ConfigError(f"a KV cache budget of {num_bytes} bytes holds {sizes.full_blocks} blocks for the "
                          f"global layers and {sizes.local_blocks} for the windowed ones; raise the budget")
    device = model.embed_tokens.device
    pools = [PagedKVStorage(count, blocks, block_size, arch.num_kv_heads, arch.head_dim, dtype, device)
             for count, blocks in ((len(windowed) - sum(windowed), sizes.full_blocks),
                                   (sum(windowed), sizes.local_blocks))]
    return HybridKVStorage(*pools, windowed)


class ModelRunner:
    """Runs steps of chunks through ``model`` on ``storage``. One step at a time.

    ``native_step``: a step of at most ``decode_max_rows`` tokens in all (decodes, short
    prefill chunks, or both) runs as one C++ call (``models/llama_step.py``) where the model
    allows it, each token a row at its own position; every other step runs the torch modules.
    """

    def __init__(self, model: LlamaForCausalLM, storage: PagedKVStorage | HybridKVStorage, native_step: bool = False,
                 decode_max_rows: int = 16) -> None:
        arch = model.arch
        expected = (arch.num_layers, arch.num_kv_heads, arch.head_dim)
        found = (storage.num_layers, storage.num_kv_heads, storage.head_dim)
        if found != expected:
            raise ValueError(f"the KV storage has (layers, kv heads, head dim) {found}; "
                             f"the model needs {expected}: allocate it with allocate_storage(model, ...)")
        if not storage.dtype.is_floating_point:
            raise ValueError(f"the KV storage holds {storage.dtype}; it must hold a floating-point dtype")
        self.model = model
        self.storage = storage
        self.device = model.embed_tokens.device
        self.native_step = NativeDecodeStep.for_model(model, storage) if native_step else None
        self.decode_max_rows = decode_max_rows

    @torch.inference_mode()
    def execute(self, chunks: Sequence[StepChunk]) -> torch.Tensor:
        """Run one step; fp32 logits [number of sampling chunks, vocab], in the chunks' order."""
        self._check(chunks)
        for pool, tables in self._pools(chunks):
            pool.zero_until(max(max(table) for table in tables) + 1)
        if self.native_step is not None and sum(len(c.token_ids) for c in chunks) <= self.decode_max_rows:
            return self._native(chunks)
        # Decodes first and together, so that they attend in one SDPA; then each prefill chunk.
        order = sorted(range(len(chunks)), key=lambda i: len(chunks[i].token_ids) != 1)
        ordered = [chunks[i] for i in order]
        lengths = [len(c.token_ids) for c in ordered]
        inputs = self._inputs([c.start for c in ordered], lengths, [list(c.block_table) for c in ordered])
        ids = torch.tensor([[t for c in ordered for t in c.token_ids]], device=self.device)  # [1, N]
        if isinstance(self.storage, HybridKVStorage):
            starts, tables = zip(*(_past_dropped(c.start, c.local_table, self.storage.block_size) for c in ordered))
            local_inputs = self._inputs(starts, lengths, tables)
            hidden = self.model(ids, self.storage, inputs, local_inputs)  # [1, N, hidden]
        else:
            hidden = self.model(ids, self.storage, inputs)
        return self.model.compute_logits(hidden[0, _sampled_tokens(chunks, order, self.device)])

    def _inputs(self, starts: Sequence[int], lengths: Sequence[int],
                tables: Sequence[list[int]]) -> PagedAttentionInputs:
        """The attention layout of rows bringing ``lengths`` tokens from ``starts`` over one pool's ``tables``."""
        inputs = paged_attention_inputs(starts, lengths, [_readable(table) for table in tables],
                                        self.storage.block_size, self.device)
        if any(DROPPED_BLOCK in table for table in tables):
            inputs = _hide_dropped(inputs, tables, self.storage.block_size)
        return inputs

    def _pools(self, chunks: Sequence[StepChunk]) -> list[tuple[PagedKVStorage, list[Sequence[int]]]]:
        """Each pool of the storage with the chunks' tables into it."""
        if isinstance(self.storage, HybridKVStorage):
            return [(self.storage.full, [c.block_table for c in chunks]),
                    (self.storage.local, [c.local_table for c in chunks])]
        return [(self.storage, [c.block_table for c in chunks])]

    def _native(self, chunks: Sequence[StepChunk]) -> torch.Tensor:
        """Every token of the step a row at its own position, through the native step: a
        prefill chunk's rows write their keys and values before any row attends, so each row
        attends to the chunk's earlier tokens, as the causal mask lets it."""
        ids = torch.tensor([t for c in chunks for t in c.token_ids], device=self.device)  # [N]
        x = self.model.embed(ids).to(torch.float32).contiguous()  # [N, hidden]
        positions = [c.start + i for c in chunks for i in range(len(c.token_ids))]
        tables = [c.block_table for c in chunks for _ in c.token_ids]
        local_tables = None
        if isinstance(self.storage, HybridKVStorage):
            local_tables = [c.local_table for c in chunks for _ in c.token_ids]
        hidden = self.native_step(x, positions, tables, local_tables)
        ends = itertools.accumulate(len(c.token_ids) for c in chunks)
        sampled = [end - 1 for end, c in zip(ends, chunks) if c.samples]
        return self.model.compute_logits(hidden if len(sampled) == len(positions) else hidden[sampled])

    def _check(self, chunks: Sequence[StepChunk]) -> None:
        if not chunks:
            raise ValueError("a step needs at least one chunk")
        max_positions = self.model.rotary.cos.shape[0]
        hybrid = isinstance(self.storage, HybridKVStorage)
        for index, chunk in enumerate(chunks):
            name = f"chunks[{index}]"
            if not chunk.token_ids or chunk.start < 0:
                raise ValueError(f"{name} has {len(chunk.token_ids)} tokens from position {chunk.start}: "
                                 "a chunk brings at least one token, from position 0 or later")
            if chunk.start + len(chunk.token_ids) > max_positions:
                raise ValueError(f"{name} reaches position {chunk.start + len(chunk.token_ids) - 1}; the model "
                                 f"runs up to {max_positions - 1}")
            if (chunk.local_table is not None) != hybrid:
                raise ValueError(f"{name} {'lacks' if hybrid else 'has'} a local_table: give one exactly when the "
                                 "storage is a HybridKVStorage (a model with windowed and global layers)")
        for pool, tables in self._pools(chunks):
            for index, (chunk, table) in enumerate(zip(chunks, tables)):
                _check_table(f"chunks[{index}]", chunk, table, pool)


def _check_table(name: str, chunk: StepChunk, table: Sequence[int], pool: PagedKVStorage) -> None:
    end, size = chunk.start + len(chunk.token_ids), pool.block_size
    if end > len(table) * size:
        raise ValueError(f"{name} reaches position {end - 1} but its {len(table)} blocks "
                         f"cover {len(table) * size} positions: allocate its blocks before scheduling it")
    if max(table) >= pool.num_blocks or min(table) < DROPPED_BLOCK:
        raise ValueError(f"{name} names a block outside 0..{pool.num_blocks - 1}")
    written = table[chunk.start // size:(end - 1) // size + 1]
    if DROPPED_BLOCK in written or all(b == DROPPED_BLOCK for b in table):
        raise ValueError(f"{name} writes positions {chunk.start}..{end - 1} into a block the sliding window "
                         "dropped, or keeps no block at all")


def _past_dropped(start: int, table: Sequence[int], block_size: int) -> tuple[int, list[int]]:
    """A row's start and table with its leading dropped blocks cut off, positions counted from the
    first kept block: a windowed layer then reads only the window, not the whole context. Its
    masks (causal, window) compare positions with positions, so shifting both by whole blocks
    changes nothing; RoPE takes the true positions from the global layers' layout."""
    dropped = next(i for i, block in enumerate(table) if block != DROPPED_BLOCK)
    return start - dropped * block_size, list(table[dropped:])


def _readable(table: list[int]) -> list[int]:
    """``table`` with dropped entries pointing at a kept block: finite values, masked out."""
    kept = next(block for block in table if block != DROPPED_BLOCK)
    return [kept if block == DROPPED_BLOCK else block for block in table]


def _hide_dropped(inputs: PagedAttentionInputs, tables: list[list[int]], block_size: int) -> PagedAttentionInputs:
    """Mask the keys of dropped blocks out of every group's attention (tables in step order)."""
    groups, row = [], 0
    for group in inputs.groups:
        rows = tables[row:row + group.num_rows]
        row += group.num_rows
        key_blocks = torch.arange(group.kv_len, device=group.blocks.device) // block_size  # [kv_len]
        visible = torch.stack([torch.tensor(table, device=group.blocks.device)[key_blocks.clamp(max=len(table) - 1)]
                               != DROPPED_BLOCK for table in rows])  # [B, kv_len]
        mask = visible[:, None, None, :]  # [B, 1, 1, kv_len]
        if group.mask is not None:
            mask = group.mask & mask  # [B, 1, T, kv_len]
        groups.append(replace(group, mask=mask))
    return replace(inputs, groups=tuple(groups))


def _sampled_tokens(chunks: Sequence[StepChunk], order: list[int], device: torch.device) -> torch.Tensor:
    """Index in the flattened step (chunks in ``order``) of each sampling chunk's last token."""
    last, token = [0] * len(chunks), 0
    for index in order:
        token += len(chunks[index].token_ids)
        last[index] = token - 1
    return torch.tensor([last[i] for i, chunk in enumerate(chunks) if chunk.samples], dtype=torch.long,
                        device=device)

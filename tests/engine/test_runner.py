"""Continuous-batching steps on a paged KV cache, on the real default model in fp32.

Whatever a step mixes (prefill chunks, decodes of other lengths, blocks shared with another
sequence), each chunk must get the logits the contiguous-cache engine gives its sequence
alone. Block tables are written by hand, physical ids deliberately out of order.
"""

from __future__ import annotations

import pytest
import torch

from mcp.base.errors import ConfigError
from mcp.engine.contiguous import contiguous_decoder
from mcp.engine.engine import NativeEngine
from mcp.engine.kv.paged import PagedKVStorage
from mcp.engine.layers.attention import paged_attention_inputs
from mcp.engine.runner import ModelRunner, StepChunk, allocate_storage
from mcp.engine.sampler import SamplingParams

BLOCK = 16
NUM_BLOCKS = 24
TEXTS = [
    "The capital of France is Paris, and the capital of Spain is Madrid. The capital of Italy is Rome, "
    "the capital of Portugal is Lisbon, the capital of Greece is Athens, and the capital of Germany is",
    "def fibonacci(n):\n    ",
    "Once upon a time, in a small village at the edge of a dark forest, there lived an old",
]


@pytest.fixture(scope="module")
def engine(fp32_engine) -> NativeEngine:
    return fp32_engine


@pytest.fixture(scope="module")
def prompts(engine) -> list[list[int]]:
    return [engine.tokenizer.encode(text) for text in TEXTS]


@pytest.fixture
def runner(engine) -> ModelRunner:
    """A fresh, zeroed cache for every test."""
    return ModelRunner(engine.model, allocate_storage(engine.model, _budget(engine), BLOCK))


def _budget(engine) -> int:
    arch = engine.model.arch
    return NUM_BLOCKS * 2 * arch.num_layers * BLOCK * arch.num_kv_heads * arch.head_dim * 4  # fp32


def _last_logits(engine, token_ids: list[int]) -> torch.Tensor:
    """The contiguous-cache engine's logits after ``token_ids``: fp32 [vocab]."""
    return contiguous_decoder(engine).score(token_ids)[-1]


def _assert_same(logits: torch.Tensor, expected: torch.Tensor) -> None:
    assert torch.allclose(logits, expected, atol=1e-4), (logits - expected).abs().max()
    assert int(logits.argmax()) == int(expected.argmax())


def test_one_chunk_prefill_matches_the_contiguous_engine(engine, runner, prompts):
    prompt = prompts[0]
    assert 2 * BLOCK < len(prompt) < 3 * BLOCK  # the last block partly filled
    logits = runner.execute([StepChunk(prompt, 0, [7, 2, 5], samples=True)])
    assert logits.shape == (1, engine.model.arch.vocab_size) and logits.dtype == torch.float32
    _assert_same(logits[0], _last_logits(engine, prompt))


def test_prefill_in_three_steps_matches_one(engine, runner, prompts):
    prompt, table = prompts[0], [20, 11, 3]
    bounds = [(0, 10), (10, 33), (33, len(prompt))]  # not on block boundaries
    for start, stop in bounds[:-1]:
        assert runner.execute([StepChunk(prompt[start:stop], start, table, samples=False)]).shape[0] == 0
    start, stop = bounds[-1]
    logits = runner.execute([StepChunk(prompt[start:], start, table, samples=True)])
    _assert_same(logits[0], _last_logits(engine, prompt))


def test_a_mixed_step_gives_each_chunk_its_logits_alone(engine, runner, prompts):
    a, b, c = prompts[1], prompts[2], prompts[0]
    tables = {"a": [23], "b": [9, 4], "c": [17, 0, 12]}
    assert len(a) + 1 < BLOCK < len(b) + 1 < 2 * BLOCK and len(a) != len(b)
    first = runner.execute([StepChunk(a, 0, tables["a"], True), StepChunk(b, 0, tables["b"], True),
                            StepChunk(c[:8], 0, tables["c"], False)])  # two prefills and a partial one
    next_a, next_b = (int(row.argmax()) for row in first)
    mixed = runner.execute([StepChunk(c[8:], 8, tables["c"], True),  # a prefill chunk from its cached prefix
                            StepChunk([next_a], len(a), tables["a"], True),  # and two decodes
                            StepChunk([next_b], len(b), tables["b"], True)])
    expected_a, expected_b = contiguous_decoder(engine).score(a + [next_a]), contiguous_decoder(engine).score(b + [next_b])
    _assert_same(first[0], expected_a[-2])
    _assert_same(first[1], expected_b[-2])
    _assert_same(mixed[0], _last_logits(engine, c))  # rows come in the chunks' order
    _assert_same(mixed[1], expected_a[-1])
    _assert_same(mixed[2], expected_b[-1])


def test_sequences_sharing_prefix_blocks_get_a_full_recompute(engine, runner, prompts):
    shared = prompts[0][: 2 * BLOCK]
    assert len(shared) == 2 * BLOCK  # two full blocks
    first, second = shared + prompts[1], shared + prompts[2][:12]
    shared_blocks = [13, 6]
    tables = [shared_blocks + [1], shared_blocks + [21, 2]]
    runner.execute([StepChunk(first, 0, tables[0], samples=False)])
    logits = runner.execute([StepChunk(second[len(shared):], len(shared), tables[1], samples=True)])
    _assert_same(logits[0], _last_logits(engine, second))
    # Both decode on, in one step: the second's prefill wrote none of the shared blocks.
    nexts = [7, int(logits[0].argmax())]
    both = runner.execute([StepChunk([n], len(s), t, True) for n, s, t in zip(nexts, (first, second), tables)])
    _assert_same(both[0], _last_logits(engine, first + [nexts[0]]))
    _assert_same(both[1], _last_logits(engine, second + [nexts[1]]))


def test_greedy_decoding_equals_the_generator(engine, runner, prompts):
    chosen, tables = [prompts[1], prompts[2]], [[5, 18], [22, 10, 14]]
    params = SamplingParams(max_tokens=16, temperature=0.0, ignore_eos=True)
    expected = [[step.token_id for step in contiguous_decoder(engine).generate(ids, params)] for ids in chosen]
    logits = runner.execute([StepChunk(ids, 0, table, True) for ids, table in zip(chosen, tables)])
    generated = [[int(row.argmax())] for row in logits]
    for _ in range(15):
        chunks = [StepChunk([ids[-1]], len(prompt) + len(ids) - 1, table, True)
                  for prompt, ids, table in zip(chosen, generated, tables)]
        for ids, row in zip(generated, runner.execute(chunks)):
            ids.append(int(row.argmax()))
    assert generated == expected


def test_step_layout_groups_decodes_and_offsets_prefill_masks():
    inputs = paged_attention_inputs([5, 20, 3], [1, 1, 4], [[2], [7, 0], [9]], BLOCK, torch.device("cpu"))
    assert inputs.positions.tolist() == [[5, 20, 3, 4, 5, 6]]
    assert inputs.slots.tolist() == [2 * BLOCK + 5, 0 * BLOCK + 4, 9 * BLOCK + 3, 9 * BLOCK + 4, 9 * BLOCK + 5,
                                     9 * BLOCK + 6]
    decodes, prefill = inputs.groups
    assert (decodes.token_start, decodes.token_stop, decodes.num_rows, decodes.kv_len) == (0, 2, 2, 21)
    assert decodes.blocks.tolist() == [[2, 2], [7, 0]]  # the short row padded with its own block
    assert decodes.mask[:, 0, 0].sum(-1).tolist() == [6, 21]
    assert (prefill.token_start, prefill.token_stop, prefill.kv_len) == (2, 6, 7)
    assert prefill.mask[0, 0].sum(-1).tolist() == [4, 5, 6, 7]  # causal from the 3 cached positions
    level = paged_attention_inputs([9, 9], [1, 1], [[1], [2]], BLOCK, torch.device("cpu"))
    assert level.groups[0].mask is None  # decodes of one length: SDPA's unmasked path


def test_bad_chunks_and_storage_are_rejected(engine, runner, prompts):
    with pytest.raises(ValueError, match="cover 16 positions"):
        runner.execute([StepChunk(prompts[0], 0, [3], True)])
    with pytest.raises(ValueError, match="outside"):
        runner.execute([StepChunk([1], 0, [NUM_BLOCKS], True)])
    with pytest.raises(ValueError, match="at least one token"):
        runner.execute([StepChunk([], 0, [1], True)])
    with pytest.raises(ConfigError, match="holds no block"):
        allocate_storage(engine.model, 1000, BLOCK)
    arch = engine.model.arch
    wrong = PagedKVStorage(arch.num_layers, 4, BLOCK, arch.num_kv_heads, arch.head_dim * 2, torch.float32, "cpu")
    with pytest.raises(ValueError, match=r"head dim\) \(30, 3, 128\); the model needs \(30, 3, 64\): "
                                         "allocate it with allocate_storage"):
        ModelRunner(engine.model, wrong)
    integers = PagedKVStorage(arch.num_layers, 4, BLOCK, arch.num_kv_heads, arch.head_dim, torch.int16, "cpu")
    with pytest.raises(ValueError, match="holds torch.int16; it must hold a floating-point dtype"):
        ModelRunner(engine.model, integers)


def test_dropped_blocks_are_hidden_from_attention(engine, runner, prompts):
    """A table with a block the sliding window dropped: what that block holds no longer matters,
    and the result differs from attending to everything."""
    prompt = prompts[0]
    assert len(prompt) > 2 * BLOCK
    table = [7, 2, 5]
    runner.execute([StepChunk(prompt, 0, table, samples=False)])
    nxt = prompt[-1]
    full = runner.execute([StepChunk([nxt], len(prompt), table, True)])[0]
    windowed = [7, -1, 5]  # the middle block dropped: positions 16..31 hidden
    first = runner.execute([StepChunk([nxt], len(prompt), windowed, True)])[0]
    for layer in runner.storage.layers:  # garbage where the dropped block was
        layer.keys[2].normal_()
        layer.values[2].fill_(1e4)
    second = runner.execute([StepChunk([nxt], len(prompt), windowed, True)])[0]
    assert torch.equal(first, second)
    assert not torch.allclose(first, full, atol=1e-3)
    with pytest.raises(ValueError, match="dropped"):  # a new token may not go to a dropped block
        runner.execute([StepChunk([nxt], 20, windowed, True)])

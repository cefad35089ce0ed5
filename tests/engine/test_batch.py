"""Batched decode on the real default model: one forward per step for every live sequence.

Each prompt of a batch must come out exactly as it does alone (greedy: the same tokens;
seeded: the same draw), whatever the other prompts' lengths, budgets and stops; finished
sequences leave the KV cache; a bad prompt stops the batch before anything runs.
"""

from __future__ import annotations

import pytest
import torch

from mcp.base.errors import ContextLengthError, InvalidRequestError
from mcp.engine.contiguous import ContiguousDecoder, contiguous_decoder
from mcp.engine.engine import EngineOptions, NativeEngine
from mcp.engine.kv.cache import KVCache
from mcp.engine.layers.attention import attention_inputs, static_attention_inputs
from mcp.engine.sampler import SamplingParams
from mcp.modelfile.reader import open_model

GREEDY = SamplingParams(max_tokens=12, temperature=0.0, ignore_eos=True)
RAW_PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n    ",
    "量子纠缠是",
    "Hi",
    "Once upon a time, in a small village at the edge of a dark forest, there lived an old",
    "1, 1, 2, 3, 5, 8,",
]
CHAT_MESSAGES = [
    [{"role": "user", "content": "What is the boiling point of water?"}],
    [{"role": "system", "content": "You answer in one sentence. " * 12},  # a long prompt: its own prefill
     {"role": "user", "content": "Why is the sky blue?"}],
    [{"role": "user", "content": "Write a haiku about autumn."}],
]


@pytest.fixture(scope="module")
def engine(smollm2_mcp) -> NativeEngine:
    with open_model(smollm2_mcp) as model_file:
        return NativeEngine(model_file, EngineOptions(device="cpu", precision="fp32"))


@pytest.fixture(scope="module")
def prompts_ids(engine) -> list[list[int]]:
    tokenizer = engine.tokenizer
    chats = [tokenizer.apply_chat_template(m, add_generation_prompt=True) for m in CHAT_MESSAGES]
    return ([tokenizer.encode(p) for p in RAW_PROMPTS]
            + [tokenizer.encode(text, add_special_tokens=False) for text in chats])


def _collect(run) -> list[list]:
    """Per prompt, the StepOutputs a BatchRun yielded for it, in order."""
    per_prompt: list[list] = []
    for outputs in run:
        per_prompt = per_prompt or [[] for _ in outputs]
        for index, step in enumerate(outputs):
            if step is not None:
                per_prompt[index].append(step)
    return per_prompt


def _alone(engine, prompt_ids, params) -> list:
    return list(contiguous_decoder(engine).generate(prompt_ids, params))


def test_batched_greedy_equals_each_prompt_alone(engine, prompts_ids):
    lengths = sorted(len(ids) for ids in prompts_ids)
    assert len(prompts_ids) == 9 and lengths[0] == 1 and lengths[-1] - lengths[0] > 64  # two prefills
    batched = _collect(contiguous_decoder(engine).generate_batch(prompts_ids, GREEDY))
    for ids, steps in zip(prompts_ids, batched):
        assert steps == _alone(engine, ids, GREEDY)  # token ids, text, finish_reason: all of it
        assert len(steps) == 12 and steps[-1].finish_reason == "length"


@pytest.mark.slow  # loads transformers (about 15 s)
def test_batched_greedy_equals_transformers(engine, prompts_ids, hf_smollm2, hf_greedy):
    hf_model, _ = hf_smollm2
    chosen = [prompts_ids[0], prompts_ids[4], prompts_ids[6]]  # raw short, raw long, chat
    batched = _collect(contiguous_decoder(engine).generate_batch(chosen, GREEDY))
    for ids, steps in zip(chosen, batched):
        assert [s.token_id for s in steps] == hf_greedy(hf_model, ids, 12)


def test_sequences_finish_independently(engine, prompts_ids):
    alone_text = "".join(s.text for s in _alone(engine, prompts_ids[0], GREEDY))
    stop = alone_text.split()[2]  # a word a few tokens in
    params = [
        SamplingParams(max_tokens=2, temperature=0.0, ignore_eos=True),
        SamplingParams(max_tokens=12, temperature=0.0, ignore_eos=True, stop=(stop,)),
        SamplingParams(max_tokens=7, temperature=0.0, ignore_eos=True),
        SamplingParams(max_tokens=12, temperature=0.0, ignore_eos=True),
    ]
    chosen = [prompts_ids[4], prompts_ids[0], prompts_ids[3], prompts_ids[6]]
    run = contiguous_decoder(engine).generate_batch(chosen, params)
    batched = _collect(run)
    assert [len(steps) for steps in batched][0::2] == [2, 7]
    assert [steps[-1].finish_reason for steps in batched] == ["length", "stop", "length", "length"]
    assert "".join(s.text for s in batched[1]) == alone_text[: alone_text.index(stop)]
    for ids, p, steps in zip(chosen, params, batched):
        assert steps == _alone(engine, ids, p)


def test_finished_sequences_leave_the_cache(engine, prompts_ids):
    budgets = [3, 1, 6, 4, 6]
    params = [SamplingParams(max_tokens=n, temperature=0.0, ignore_eos=True) for n in budgets]
    run = contiguous_decoder(engine).generate_batch(prompts_ids[:5], params)
    assert run.num_rows == 5
    rows, live = [], []
    for outputs in run:
        rows.append(run.num_rows)  # the KV cache tensors' batch dimension after this step
        live.append(sum(1 for n in budgets if n > len(live) + 1))
    assert rows == live == [4, 4, 3, 2, 2, 0]


def test_seeded_sampling_is_reproducible_inside_a_batch(engine, prompts_ids):
    params = [SamplingParams(max_tokens=10, temperature=1.0, top_p=0.95, seed=seed) for seed in (1, 2, 1)]
    chosen = [prompts_ids[0], prompts_ids[0], prompts_ids[6]]
    batched = _collect(contiguous_decoder(engine).generate_batch(chosen, params))
    for ids, p, steps in zip(chosen, params, batched):
        assert steps == _alone(engine, ids, p)
    assert batched[0] != batched[1]  # same prompt, other seed


def test_cancel_ends_every_live_sequence(engine, prompts_ids):
    steps_taken = []
    run = contiguous_decoder(engine).generate_batch(prompts_ids[:3], GREEDY, should_cancel=lambda: len(steps_taken) >= 2)
    for outputs in run:
        steps_taken.append(outputs)
    assert len(steps_taken) == 3
    assert [step.finish_reason for step in steps_taken[-1]] == ["cancelled"] * 3


def test_too_long_prompt_is_refused_before_anything_runs(engine, prompts_ids):
    generator = ContiguousDecoder(engine.model, engine.tokenizer, max_context=64)
    calls = []
    too_long = list(range(100, 180))
    with pytest.raises(ContextLengthError, match=r"^prompts\[2\]: the prompt has 80 tokens but the context holds 64"):
        generator.generate_batch([prompts_ids[0], prompts_ids[1], too_long], GREEDY,
                                 should_cancel=lambda: calls.append(1) or False)
    assert calls == []


@pytest.mark.parametrize(
    ("prompts", "params", "message"),
    [
        ([], GREEDY, "prompts is empty"),
        ([[1, 2], []], GREEDY, r"prompts\[1\]: the prompt is empty"),
        ([[1, 2], [3]], [GREEDY], "got 1 sampling params for 2 prompts"),
        ([[1, 2], [3]], [GREEDY, {"max_tokens": 3}], r"params\[1\] must be SamplingParams, got dict"),
    ],
)
def test_bad_batches_are_invalid_requests(engine, prompts, params, message):
    with pytest.raises(InvalidRequestError, match=message):
        contiguous_decoder(engine).generate_batch(prompts, params)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cache_writes_level_and_ragged_rows(dtype):
    cache = KVCache.allocate(1, 2, 1, 6, 2, dtype, torch.device("cpu"))
    new = torch.arange(1, 5, dtype=dtype).view(2, 1, 1, 2)  # [B, KVH, T, D]
    keys, _ = cache[0].write(new, -new, attention_inputs([3, 3], 1, cache).slots, kv_len=4)
    assert keys.shape == (2, 1, 4, 2) and keys[:, 0, 3].tolist() == [[1, 2], [3, 4]]
    keys, values = cache[0].write(new, -new, attention_inputs([1, 4], 1, cache).slots, kv_len=5)
    assert keys[0, 0, 1].tolist() == [1, 2] and keys[1, 0, 4].tolist() == [3, 4]
    assert values[1, 0, 4].tolist() == [-3, -4] and keys[0, 0, 4].tolist() == [0, 0]


def test_cache_remove_moves_the_last_row_into_the_gap():
    cache = KVCache.allocate(num_layers=2, batch_size=3, num_kv_heads=1, max_len=4, head_dim=2,
                             dtype=torch.float32, device=torch.device("cpu"))
    for row in range(3):
        for layer in cache.layers:
            layer.keys[row].fill_(row + 1)
            layer.values[row].fill_(-(row + 1))
    cache.remove(0, num_slots=2)
    assert cache.num_rows == 2 and cache[1].keys.shape == (2, 1, 4, 2)
    assert cache[1].keys[0, 0, :, 0].tolist() == [3, 3, 1, 1]  # two slots of row 2 moved into row 0
    assert cache[0].values[1].unique().tolist() == [-2]
    with pytest.raises(ValueError, match="row 2 is not one of the 2 live rows"):
        cache.remove(2, num_slots=1)


def test_attention_layout_masks_each_row_to_its_own_keys():
    cache = KVCache.allocate(1, 3, 1, 8, 2, torch.float32, torch.device("cpu"))
    level = attention_inputs([4, 4, 4], 1, cache)
    assert level.mask is None and level.kv_len == 5 and level.positions.tolist() == [[4]] * 3
    ragged = attention_inputs([2, 4, 0], 1, cache)
    assert ragged.kv_len == 5 and ragged.positions.tolist() == [[2], [4], [0]]
    assert ragged.mask[:, 0, 0].int().tolist() == [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]]
    prefill = attention_inputs([0, 0, 0], 3, cache)
    assert prefill.mask.shape == (1, 1, 3, 3) and prefill.mask[0, 0].int().tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    assert prefill.slots.start == 0 and level.slots.start == 4 and ragged.slots.start is None
    assert ragged.slots.rows.tolist() == [[0], [1], [2]]
    static = static_attention_inputs(torch.tensor([[2], [4], [0]]), cache)
    assert static.kv_len == 8 and static.mask[1, 0, 0].int().tolist() == [1, 1, 1, 1, 1, 0, 0, 0]


@pytest.mark.slow
def test_compiled_decode_step_gives_the_eager_tokens(tiny_mcp, prompts_ids):
    """torch.compile's step against the eager one, on the 2-layer model (inductor compiles a
    graph per layer: the 30-layer default model took ~220 s of a 2-core CI run for the same check)."""
    with open_model(tiny_mcp) as model_file:
        engine = NativeEngine(model_file, EngineOptions(device="cpu", precision="fp32"))
    compiled = ContiguousDecoder(engine.model, engine.tokenizer, engine.max_context, compile_step=True)
    chosen = prompts_ids[:3]
    eager = _collect(contiguous_decoder(engine).generate_batch(chosen, GREEDY))
    assert _collect(compiled.generate_batch(chosen, GREEDY)) == eager
    assert list(compiled.generate(chosen[0], GREEDY)) == eager[0]

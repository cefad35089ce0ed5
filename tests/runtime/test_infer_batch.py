"""``Model.infer_batch`` / ``Model.chat_batch`` on the real default model.

Each result of a batch is the result ``infer`` / ``chat`` gives for that prompt alone,
with its own usage, timings and finish_reason; bad input names its index; threads may
batch side by side. fp32 weights: then a row's arithmetic does not depend on the batch's
shape, so "the same result" can be exact (bf16 GEMMs round by shape; near-ties may flip).
"""

from __future__ import annotations

import threading

import pytest

from mcp.config.runtime import RuntimeConfig
from mcp.runtime import ContextLengthError, InferResult, InvalidRequestError, Session

GREEDY = {"temperature": 0.0, "max_tokens": 10}
PROMPTS = [
    "Explain quantum entanglement in simple terms.",
    "Hi",
    "Name three colours.",
    "What is the tallest mountain on Earth, and how was its height first measured?",
]


@pytest.fixture(scope="module")
def model(smollm2_mcp):
    config = RuntimeConfig(model_dir=smollm2_mcp.parent, device="cpu", precision="fp32")
    with Session(config) as session:
        yield session.load_model("smollm2-135m-instruct.mcp")


def _same_output(batched: InferResult, alone: InferResult) -> None:
    """Same output; usage.cached_tokens may differ (whichever ran first filled the prefix cache)."""
    assert (batched.text, batched.token_ids, batched.finish_reason) == (alone.text, alone.token_ids, alone.finish_reason)
    assert (batched.usage.prompt_tokens, batched.usage.completion_tokens) == (
        alone.usage.prompt_tokens, alone.usage.completion_tokens)


def test_infer_batch_results_equal_infer_alone(model):
    results = model.infer_batch(PROMPTS, **GREEDY)
    assert len(results) == len(PROMPTS)
    for prompt, result in zip(PROMPTS, results):
        alone = model.infer(prompt, **GREEDY)
        _same_output(result, alone)
        assert result.usage.prompt_tokens == alone.usage.prompt_tokens > 10  # the chat template
        assert result.usage.completion_tokens == len(result.token_ids)
        assert (result.backend, result.precision, result.model) == ("native", model.precision, "smollm2-135m-instruct")
        assert "fp32" in result.precision
        assert 0 < result.timings.ttft_s <= result.timings.total_s and result.timings.tpot_s > 0
        assert result.logprobs is None


def test_raw_system_and_logprobs_as_infer(model):
    raw = model.infer_batch(["The capital of France is", "1, 2, 3,"], raw=True, logprobs=2, **GREEDY)
    _same_output(raw[0], model.infer("The capital of France is", raw=True, **GREEDY))
    assert "Paris" in raw[0].text
    assert raw[1].usage.prompt_tokens == len(model.tokenize("1, 2, 3,"))
    assert [len(r.logprobs) for r in raw] == [10, 10] and len(raw[1].logprobs[0].top_logprobs) == 2
    system = "You are a pirate."
    pirate = model.infer_batch(PROMPTS[:2], system=system, **GREEDY)
    for prompt, result in zip(PROMPTS[:2], pirate):
        _same_output(result, model.infer(prompt, system=system, **GREEDY))


def test_chat_batch_equals_chat(model):
    conversations = [
        [{"role": "user", "content": PROMPTS[0]}],
        [{"role": "system", "content": "Answer in French."}, {"role": "user", "content": PROMPTS[2]}],
    ]
    for messages, result in zip(conversations, model.chat_batch(conversations, **GREEDY)):
        _same_output(result, model.chat(messages, **GREEDY))


def test_each_result_finishes_for_its_own_reason(model):
    alone = model.infer(PROMPTS[0], **GREEDY)
    stop = alone.text.split()[1]
    results = model.infer_batch([PROMPTS[0], PROMPTS[1]], stop=[stop], temperature=0.0, max_tokens=24)
    assert results[0].finish_reason == "stop" and results[0].text == alone.text[: alone.text.index(stop)]
    assert results[1].finish_reason in ("stop", "length")
    _same_output(results[1], model.infer(PROMPTS[1], stop=[stop], temperature=0.0, max_tokens=24))
    assert results[0].timings.total_s < results[1].timings.total_s  # it left the batch early


def test_seeds_reproduce_inside_a_batch(model):
    batched = model.infer_batch(PROMPTS[:3], temperature=1.0, max_tokens=8, seed=5)
    for prompt, result in zip(PROMPTS[:3], batched):
        _same_output(result, model.infer(prompt, temperature=1.0, max_tokens=8, seed=5))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m: m.infer_batch([]), "prompts is empty: give at least one"),
        (lambda m: m.infer_batch("one prompt"), "prompts must be a list, got str"),
        (lambda m: m.infer_batch(["a", "b", 3]), r"prompts\[2\] must be a string, got int"),
        (lambda m: m.infer_batch(["a"], temprature=0.5), r"unknown argument\(s\) temprature"),
        (lambda m: m.infer_batch(["a"], max_tokens=0), r"max_tokens must be an integer in \[1, 2147483647\]"),
        (lambda m: m.infer_batch(["a"], raw=True, system="s"), "system needs the chat template"),
        (lambda m: m.chat_batch([]), "conversations is empty"),
        (lambda m: m.chat_batch([[{"role": "user", "content": "hi"}], [{"role": "user"}]]),
         r"conversations\[1\]: messages\[0\] has no 'content'"),
        (lambda m: m.chat_batch(["hi"]), r"conversations\[0\]: messages must be a list"),
    ],
)
def test_bad_batches_name_what_is_wrong(model, call, message):
    with pytest.raises(InvalidRequestError, match=message):
        call(model)


def test_too_long_prompt_names_its_index(smollm2_mcp):
    with Session(RuntimeConfig(device="cpu", precision="fp32", max_context=64)) as session:
        small = session.load_model(smollm2_mcp)
        with pytest.raises(ContextLengthError, match=r"prompts\[1\]: the prompt has \d+ tokens but the context holds 64"):
            small.infer_batch(["Hi", "word " * 100], raw=True)
        conversation = [{"role": "user", "content": "word " * 100}]
        with pytest.raises(ContextLengthError, match=r"conversations\[0\]: the prompt has"):
            small.chat_batch([conversation])
        assert [r.usage.completion_tokens for r in small.infer_batch(["Hi", "Yo"], raw=True, **GREEDY)] == [10, 10]


def test_threads_batch_side_by_side(model):
    expected_batch = [r.token_ids for r in model.infer_batch(PROMPTS[:2], **GREEDY)]
    expected_single = model.infer(PROMPTS[2], **GREEDY).token_ids
    results, errors = {}, []

    def work(name, call):
        try:
            results[name] = call()
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    calls = {
        "batch1": lambda: [r.token_ids for r in model.infer_batch(PROMPTS[:2], **GREEDY)],
        "batch2": lambda: [r.token_ids for r in model.infer_batch(PROMPTS[:2], **GREEDY)],
        "single": lambda: model.infer(PROMPTS[2], **GREEDY).token_ids,
    }
    threads = [threading.Thread(target=work, args=item) for item in calls.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert results == {"batch1": expected_batch, "batch2": expected_batch, "single": expected_single}

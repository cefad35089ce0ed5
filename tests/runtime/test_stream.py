"""``TextStream``: deltas as they come, cancel/close/garbage collection stop the request and free
its KV blocks, and ``result`` once read to the end. Real default model (auto precision)."""

from __future__ import annotations

import gc
import time

import pytest

from mcp.config.runtime import RuntimeConfig
from mcp.engine.loop_config import LoopConfig
from mcp.runtime import Session

PROMPT = "Tell me a long story about a dragon."
LONG = {"temperature": 0.0, "max_tokens": 300, "ignore_eos": True}


@pytest.fixture(scope="module")
def model(smollm2_auto_mcp):
    config = RuntimeConfig(device="cpu", scheduler=LoopConfig(kv_cache_bytes=256 * 16 * 46080))
    with Session(config) as session:
        yield session.load_model(smollm2_auto_mcp)


@pytest.fixture
def endings(model):
    """finish_reason of every request that ends during the test, in order."""
    reasons: list[str] = []
    handle = model.add_hook("on_generation_complete", lambda event: reasons.append(event.finish_reason))
    yield reasons
    handle.remove()


def _idle(model, timeout: float = 10.0) -> bool:
    """Wait until the loop holds no request; True when every KV block is back in the pool."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stats = model.loop.stats()
        if stats.num_running == stats.num_waiting == 0:
            return stats.num_free_blocks == stats.num_blocks
        time.sleep(0.01)
    return False


def test_result_after_the_stream_is_read_to_its_end(model):
    stream = model.stream(PROMPT, temperature=0.0, max_tokens=16)
    assert stream.result is None
    text = "".join(stream)
    result = stream.result
    assert result is not None and result.text == text
    assert result.finish_reason in ("stop", "length") and result.usage.completion_tokens == len(result.token_ids)
    assert 0 < result.timings.ttft_s <= result.timings.total_s
    assert 0 <= result.timings.queue_s < result.timings.ttft_s  # it left the queue before its first token
    again = model.infer(PROMPT, temperature=0.0, max_tokens=16)
    assert (again.text, again.token_ids, again.finish_reason) == (result.text, result.token_ids, result.finish_reason)
    assert list(stream) == []  # exhausted stays exhausted


def test_cancel_stops_generation_and_frees_the_blocks(model, endings):
    stream = model.stream(PROMPT, **LONG)
    first = next(stream)
    stream.cancel()
    rest = "".join(stream)  # what was generated before the cancel took effect
    assert stream.result.finish_reason == "cancelled"
    assert stream.result.text == first + rest and stream.result.usage.completion_tokens < 300
    assert endings == ["cancelled"] and _idle(model)


def test_close_ends_the_stream_at_once(model, endings):
    stream = model.stream(PROMPT, **LONG)
    next(stream)
    stream.close()
    assert list(stream) == [] and stream.result is None
    assert _idle(model) and endings == ["cancelled"]


def test_breaking_out_of_a_for_loop_cancels_the_request(model, endings):
    for number, _ in enumerate(model.chat_stream([{"role": "user", "content": PROMPT}], **LONG)):
        if number == 2:
            break
    gc.collect()  # CPython drops the stream at once; other interpreters on collection
    assert _idle(model) and endings == ["cancelled"]
    stats = model.loop.stats()
    assert stats.num_free_blocks == stats.num_blocks


def test_an_abandoned_stream_is_cancelled_when_collected(model, endings):
    stream = model.stream(PROMPT, **LONG)
    next(stream)
    del stream
    gc.collect()
    assert _idle(model) and endings == ["cancelled"]


def test_steps_give_token_ids_and_logprobs_then_the_result(model):
    stream = model.stream(PROMPT, max_tokens=6, temperature=0.0, ignore_eos=True, logprobs=2)
    steps = list(stream.steps())
    assert len(steps) == 6 and stream.result is not None
    assert tuple(step.token_id for step in steps) == stream.result.token_ids
    assert "".join(step.text for step in steps) == stream.result.text
    assert all(len(step.top_logprobs) == 2 and step.top_logprobs[0][0] == step.token_id for step in steps)
    assert list(stream.steps()) == []  # read once


async def _read_async(stream) -> list:
    return [step async for step in stream.asteps()]


def test_async_steps_match_the_blocking_ones_for_concurrent_readers(model):
    # Three requests read on one event loop, no thread per reader: each gets exactly the tokens
    # the blocking reader gets for the same greedy request, then its result.
    import asyncio

    prompts = [PROMPT, "Name three colours.", "Count to ten:"]
    expected = [list(model.stream(p, max_tokens=12, temperature=0.0, ignore_eos=True).steps()) for p in prompts]
    streams = [model.stream(p, max_tokens=12, temperature=0.0, ignore_eos=True) for p in prompts]

    async def read_all():
        return await asyncio.gather(*(_read_async(s) for s in streams))

    got = asyncio.run(read_all())
    for stream, steps, want in zip(streams, got, expected):
        assert [s.token_id for s in steps] == [s.token_id for s in want]
        assert stream.result is not None and stream.result.token_ids == tuple(s.token_id for s in want)
        assert stream.result.finish_reason == "length"


def test_a_cancel_ends_async_steps_and_frees_the_blocks(model, endings):
    import asyncio

    stream = model.stream(PROMPT, **LONG)

    async def read_three_then_cancel():
        steps = []
        async for step in stream.asteps():
            steps.append(step)
            if len(steps) == 3:
                stream.cancel()
        return steps

    steps = asyncio.run(read_three_then_cancel())
    assert 3 <= len(steps) < 300 and stream.result.finish_reason == "cancelled"
    assert _idle(model)

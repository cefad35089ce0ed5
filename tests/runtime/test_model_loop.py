"""The SDK through the engine loop, on the real default model in fp32: exactness against the
contiguous-cache Generator, threads batching together, scheduling options, hooks, admission,
prefix sharing, and unload while a request runs."""

from __future__ import annotations

import threading

import pytest

from mcp.config.runtime import GenerationDefaults, RuntimeConfig
from mcp.engine.contiguous import contiguous_decoder
from mcp.engine.handle import RequestOptions
from mcp.engine.loop_config import LoopConfig
from mcp.engine.sampler import SamplingParams
from mcp.engine.scheduler.scheduler import SchedulerConfig
from mcp.engine.scheduler.slo import SLOClass, SLOTarget
from mcp.runtime import CapacityError, InvalidRequestError, RequestCancelled, Session

GREEDY = {"temperature": 0.0, "max_tokens": 12}
PROMPTS = [
    "Explain quantum entanglement in simple terms.",
    "Hi",
    "Name three colours.",
    "What is the tallest mountain on Earth?",
    "Write a haiku about the sea.",
    "List the planets of the solar system.",
]
KV_BYTES = 512 * 16 * 46080  # 512 blocks of 16 tokens for SmolLM2 in fp32


def _config(smollm2_mcp, **loop) -> RuntimeConfig:
    loop.setdefault("kv_cache_bytes", KV_BYTES)
    return RuntimeConfig(model_dir=smollm2_mcp.parent, device="cpu", precision="fp32", scheduler=LoopConfig(**loop))


@pytest.fixture(scope="module")
def model(smollm2_mcp):
    with Session(_config(smollm2_mcp)) as session:
        yield session.load_model("smollm2-135m-instruct.mcp")


def _generator_tokens(model, text: str, max_tokens: int) -> tuple[int, ...]:
    params = SamplingParams(max_tokens=max_tokens, temperature=0.0)
    return tuple(step.token_id for step in contiguous_decoder(model.engine).generate(model.tokenize(text), params))


def test_greedy_tokens_equal_the_generator_alone_in_fp32(model):
    for text in PROMPTS[:4]:
        result = model.infer(text, raw=True, **GREEDY)
        assert result.token_ids == _generator_tokens(model, text, GREEDY["max_tokens"])
        assert result.usage.prompt_tokens == len(model.tokenize(text))


def test_calls_from_threads_batch_together_with_each_its_own_tokens(model):
    expected = {text: _generator_tokens(model, text, GREEDY["max_tokens"]) for text in PROMPTS}
    before = model.loop.stats().max_sequences_in_step
    results, errors = {}, []
    barrier = threading.Barrier(len(PROMPTS))

    def work(text: str) -> None:
        try:
            barrier.wait()
            results[text] = model.infer(text, raw=True, **GREEDY).token_ids
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(text,)) for text in PROMPTS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and results == expected
    assert before <= 1  # every call before this test ran alone
    assert model.loop.stats().max_sequences_in_step >= 3  # at least half of them shared a step


def test_scheduling_options_are_checked_before_anything_is_queued(model):
    finished = model.loop.stats().num_finished
    with pytest.raises(InvalidRequestError, match="unknown SLO class 'urgent'; use one of critical, high, medium, low"):
        model.infer("Hi", slo_class="urgent")
    with pytest.raises(InvalidRequestError, match="tenant must be a non-empty string"):
        model.chat([{"role": "user", "content": "Hi"}], tenant=3)
    with pytest.raises(InvalidRequestError, match="timeout must be a positive number"):
        model.stream("Hi", timeout=0)
    with pytest.raises(InvalidRequestError, match="timeout must be a positive number"):
        model.infer_batch(["Hi"], timeout="soon")
    assert model.loop.stats().num_finished == finished  # nothing ran
    ok = model.chat_batch([[{"role": "user", "content": "Hi"}]], slo_class="critical", tenant="acme", **GREEDY)
    assert ok[0].finish_reason in ("stop", "length")


def test_start_stream_is_stream_and_chat_stream_with_typed_parameters(model):
    params, options = SamplingParams(temperature=0.0, max_tokens=8), RequestOptions(SLOClass.HIGH, "acme")
    messages = [{"role": "user", "content": "Hi"}]
    chat, text = model.start_stream(messages, params, options), model.start_stream("Hi", params, options)
    assert list(chat) and list(text)
    assert chat.result.token_ids == model.chat(messages, temperature=0.0, max_tokens=8).token_ids
    assert text.result.token_ids == model.infer("Hi", raw=True, temperature=0.0, max_tokens=8).token_ids
    assert model.defaults == GenerationDefaults()  # the Session's (this config leaves them as they are)
    with pytest.raises(InvalidRequestError, match="messages must be a list"):
        model.start_stream(b"Hi", params, options)


def test_timeout_ends_the_request_with_finish_reason_deadline(model):
    result = model.infer(PROMPTS[0], temperature=0.0, max_tokens=400, ignore_eos=True, timeout=0.3)
    assert result.finish_reason == "deadline" and 0 < result.usage.completion_tokens < 400
    assert 0.3 <= result.timings.total_s < 2.0
    stats = model.loop.stats()
    assert stats.num_free_blocks == stats.num_blocks


def test_hooks_see_tenant_class_tokens_and_the_end(model):
    events = []
    handles = [model.add_hook(name, events.append)
               for name in ("on_sequence_start", "on_token_generated", "on_generation_complete")]
    try:
        result = model.infer("Hi", tenant="acme", slo_class="high", **GREEDY)
    finally:
        for handle in handles:
            handle.remove()
    assert {(e.tenant, e.slo_class) for e in events} == {("acme", "high")}
    assert [type(e).__name__ for e in events] == (
        ["SequenceStarted"] + ["TokenGenerated"] * len(result.token_ids) + ["GenerationCompleted"])
    assert tuple(e.token_id for e in events[1:-1]) == result.token_ids
    end = events[-1]
    assert (end.finish_reason, end.num_output_tokens, end.num_prompt_tokens) == (
        result.finish_reason, len(result.token_ids), result.usage.prompt_tokens)
    assert end.timings.ttft_s == pytest.approx(result.timings.ttft_s)
    with pytest.raises(InvalidRequestError, match="unknown hook"):
        model.add_hook("on_finish", print)


def test_shared_system_prompt_is_served_from_the_prefix_cache(model):
    system = "You are a helpful assistant who answers briefly and precisely. " * 4
    first = model.infer("Hi", system=system, **GREEDY)
    second = model.infer("Name three colours.", system=system, **GREEDY)
    assert second.usage.cached_tokens >= 48 and second.usage.cached_tokens % 16 == 0
    assert second.usage.cached_tokens < second.usage.prompt_tokens
    assert first.usage.prompt_tokens > 48


def test_admission_refusal_reaches_the_caller_at_once(smollm2_mcp):
    tight = {SLOClass.LOW: SLOTarget(ttft_s=0.001, tpot_s=1.0)}
    config = _config(smollm2_mcp, scheduler=SchedulerConfig(max_num_seqs=1, max_waiting=1), slo_targets=tight)
    with Session(config) as session:
        model = session.load_model("smollm2-135m-instruct.mcp")
        running = model.stream(PROMPTS[0], temperature=0.0, max_tokens=40, ignore_eos=True, slo_class="low")
        next(running)
        queued = model.stream(PROMPTS[1], slo_class="low", **GREEDY)
        with pytest.raises(CapacityError) as info:
            model.infer(PROMPTS[2], slo_class="low", **GREEDY)
        assert info.value.retry_after_s > 0 and "retry later" in str(info.value)
        assert "".join(queued) and queued.result.finish_reason in ("stop", "length")
        running.close()
        endings = []
        model.add_hook("on_generation_complete", lambda event: endings.append(event.finish_reason))
        with pytest.raises(CapacityError):  # a batch is refused as a whole: what was queued is taken back
            model.infer_batch(PROMPTS, slo_class="low", **GREEDY)
        assert 1 <= len(endings) < len(PROMPTS) and set(endings) <= {"cancelled", "stop", "length"}
        stats = model.loop.stats()
        assert stats.num_running == stats.num_waiting == 0 and stats.num_free_blocks == stats.num_blocks


def test_unload_while_a_stream_runs_fails_it_cleanly(smollm2_mcp):
    with Session(_config(smollm2_mcp)) as session:
        model = session.load_model("smollm2-135m-instruct.mcp", name="temp")
        stream = model.stream(PROMPTS[0], temperature=0.0, max_tokens=300, ignore_eos=True)
        assert next(stream)
        loop = model.loop
        session.unload_model(model)
        with pytest.raises(RequestCancelled, match="unloaded while this request ran"):
            list(stream)
        assert loop.closed and loop.stats().num_free_blocks == loop.stats().num_blocks
        with pytest.raises(InvalidRequestError, match="unloaded"):
            model.stream("Hi")
        with pytest.raises(InvalidRequestError, match="unloaded"):
            model.loop


def test_a_model_dropped_without_unload_stops_its_loop(smollm2_mcp):
    import gc

    session = Session(_config(smollm2_mcp))
    model = session.load_model("smollm2-135m-instruct.mcp")
    loop = model.loop
    assert model.infer("Hi", **GREEDY).usage.completion_tokens > 0
    del session, model
    gc.collect()
    assert loop.closed  # set by the loop thread as it ends

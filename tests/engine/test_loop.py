"""The engine loop on the real default model in fp32: batching, exactness, preemption, fairness,
admission, cancellation, deadlines, prefix sharing, hooks and closing.

fp32 weights, so that a sequence's logits do not depend on what it is batched with and
"the same tokens as alone" can be exact.
"""

from __future__ import annotations

import logging
import threading
import time

import pytest

from mcp.base.errors import (CapacityError, ContextLengthError, EngineError, InvalidRequestError,
                             RequestCancelled)
from mcp.engine.contiguous import contiguous_decoder
from mcp.engine.engine import NativeEngine
from mcp.engine.handle import RequestHandle, RequestOptions
from mcp.engine.loop import EngineLoop
from mcp.engine.loop_config import LoopConfig
from mcp.engine.sampler import SamplingParams
from mcp.engine.scheduler.scheduler import SchedulerConfig
from mcp.engine.scheduler.slo import SLOClass, SLOTarget

TEXTS = [
    "The capital of France is",
    "def fibonacci(n):\n    ",
    "Once upon a time, in a small village at the edge of a dark forest, there lived an old",
    "1, 2, 3, 4,",
]
KV_BYTES = 256 * 16 * 46080  # 256 blocks of 16 tokens, SmolLM2 in fp32 (45 KiB a token)


@pytest.fixture(scope="module")
def engine(fp32_engine) -> NativeEngine:
    return fp32_engine


@pytest.fixture(scope="module")
def prompts(engine) -> list[list[int]]:
    return [engine.tokenizer.encode(text) for text in TEXTS]


def make_loop(engine, **scheduler) -> EngineLoop:
    loop_keys = ("policy", "slo_targets", "enable_prefix_caching", "sink_tokens", "window_tokens")
    extra = {k: scheduler.pop(k) for k in loop_keys if k in scheduler}
    return EngineLoop(engine, LoopConfig(scheduler=SchedulerConfig(**scheduler), kv_cache_bytes=KV_BYTES, **extra))


@pytest.fixture
def loop(engine):
    loop = make_loop(engine)
    yield loop
    loop.close()


def greedy(max_tokens: int) -> SamplingParams:
    return SamplingParams(max_tokens=max_tokens, temperature=0.0, ignore_eos=True)


def alone(engine, prompt_ids, params) -> list[int]:
    return [step.token_id for step in contiguous_decoder(engine).generate(prompt_ids, params)]


def tokens(handle: RequestHandle) -> list[int]:
    return [step.token_id for step in handle]


def all_blocks_free(loop: EngineLoop) -> bool:
    stats = loop.stats()
    return stats.num_free_blocks == stats.num_blocks and stats.num_running == stats.num_waiting == 0


def test_concurrent_requests_batch_and_each_gets_its_tokens_alone(engine, loop, prompts):
    params = greedy(12)
    expected = [alone(engine, ids, params) for ids in prompts]
    handles = [loop.submit(ids, params) for ids in prompts]
    assert [tokens(h) for h in handles] == expected
    assert [h.outcome.finish_reason for h in handles] == ["length"] * 4
    stats = loop.stats()
    assert stats.max_sequences_in_step == 4 and stats.num_finished == 4
    assert all_blocks_free(loop)
    loop.kv.check_invariants()


def test_requests_from_threads_join_a_running_batch(engine, loop, prompts):
    params = greedy(10)
    expected = [alone(engine, ids, params) for ids in prompts]
    results: dict[int, list[int]] = {}

    def work(index: int) -> None:
        time.sleep(0.02 * index)  # arrive while the others run: they join between steps
        results[index] = tokens(loop.submit(prompts[index], params))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(prompts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [results[i] for i in range(len(prompts))] == expected
    assert loop.stats().max_sequences_in_step > 1


def test_sampling_with_a_seed_and_stop_strings_matches_the_generator(engine, loop, prompts):
    seeded = SamplingParams(max_tokens=16, temperature=0.9, seed=11)
    text = "".join(s.text for s in contiguous_decoder(engine).generate(prompts[2], greedy(20)))
    stop = SamplingParams(max_tokens=20, temperature=0.0, stop=(text.split()[2],))
    handles = [loop.submit(prompts[0], seeded), loop.submit(prompts[2], stop)]
    got = [list(h) for h in handles]
    for params, ids, steps in zip((seeded, stop), (prompts[0], prompts[2]), got):
        assert steps == list(contiguous_decoder(engine).generate(ids, params))
    assert handles[1].outcome.finish_reason == "stop" and got[1][-1].finish_reason == "stop"


def test_a_long_prompt_is_prefilled_in_chunks_with_the_same_tokens(engine, prompts):
    loop = make_loop(engine, max_num_batched_tokens=8)  # every prompt takes several steps
    try:
        params = greedy(6)
        assert tokens(loop.submit(prompts[2], params)) == alone(engine, prompts[2], params)
        assert loop.stats().num_steps >= len(prompts[2]) // 8 + 5
    finally:
        loop.close()


def test_critical_request_preempts_low_ones_that_still_finish_with_their_tokens(engine, prompts):
    loop = make_loop(engine, max_num_seqs=2)
    try:
        low_params, critical_params = greedy(40), greedy(4)
        expected_low = [alone(engine, ids, low_params) for ids in prompts[:2]]
        low = [loop.submit(ids, low_params, RequestOptions(slo_class="low")) for ids in prompts[:2]]
        for handle in low:
            next(handle)  # both are running
        critical = loop.submit(prompts[3], critical_params, RequestOptions(slo_class="critical"))
        assert tokens(critical) == alone(engine, prompts[3], critical_params)
        assert [tokens(h) for h in low] == [e[1:] for e in expected_low]  # the first token was read above
        assert [h.outputs[0].token_id for h in low] == [e[0] for e in expected_low]
        first_low_end = min(h.outcome.timings.finished_s for h in low)
        assert critical.outcome.timings.first_token_s < first_low_end
        assert critical.outcome.timings.finished_s < first_low_end
        assert sum(h.outcome.num_preemptions for h in low) >= 1 and loop.stats().num_preemptions >= 1
        assert all_blocks_free(loop)
    finally:
        loop.close()


def _first_token_order(engine, prompts, policy: str) -> list[str]:
    """Tenant a floods 6 requests, then tenant b sends 2; one sequence at a time."""
    loop = make_loop(engine, max_num_seqs=1, policy=policy)
    order: list[str] = []
    loop.hooks.add("on_token_generated", lambda e: order.append(e.request_id) if e.index == 0 else None)
    try:
        params = greedy(6)
        handles = {f"a{i}": loop.submit(prompts[i % 4], params, RequestOptions(tenant="a")) for i in range(6)}
        handles |= {f"b{i}": loop.submit(prompts[i], params, RequestOptions(tenant="b")) for i in range(2)}
        for handle in handles.values():
            handle.wait()
        names = {h.request_id: name for name, h in handles.items()}
        return [names[request_id] for request_id in order]
    finally:
        loop.close()


def test_fair_share_lets_a_second_tenant_through_a_flood(engine, prompts):
    fair = _first_token_order(engine, prompts, "slo")
    assert max(fair.index("b0"), fair.index("b1")) < fair.index("a4")  # b is not left behind a's flood
    assert _first_token_order(engine, prompts, "fcfs")[-2:] == ["b0", "b1"]  # what plain arrival order gives


def test_admission_refuses_with_a_retry_hint_when_the_queue_is_full(engine, prompts):
    tight = {SLOClass.LOW: SLOTarget(ttft_s=0.001, tpot_s=1.0)}
    loop = make_loop(engine, max_num_seqs=1, max_waiting=1, slo_targets=tight)
    try:
        running = loop.submit(prompts[0], greedy(30), RequestOptions(slo_class="low"))
        next(running)
        queued = loop.submit(prompts[1], greedy(4), RequestOptions(slo_class="low"))  # the queue was empty
        with pytest.raises(CapacityError, match="saturated") as info:
            loop.submit(prompts[2], greedy(4), RequestOptions(slo_class="low"))
        assert info.value.retry_after_s > 0
        medium = loop.submit(prompts[2], greedy(4))  # its 5 s target is met: admitted
        assert [h.wait().finish_reason for h in (running, queued, medium)] == ["length"] * 3
        assert all_blocks_free(loop) and loop.stats().num_finished == 3  # the refused one never entered
    finally:
        loop.close()


def test_cancel_ends_the_request_and_frees_its_blocks(engine, loop, prompts):
    handle = loop.submit(prompts[2], greedy(200))
    next(handle), next(handle)
    handle.cancel()
    outcome = handle.wait()
    assert outcome.finish_reason == "cancelled" and 2 <= outcome.num_output_tokens < 200
    assert all_blocks_free(loop)
    loop.kv.check_invariants()
    params = greedy(5)
    assert tokens(loop.submit(prompts[1], params)) == alone(engine, prompts[1], params)  # serves on


def test_a_failing_step_ends_its_requests_with_an_error_and_the_loop_serves_on(engine, loop, prompts, monkeypatch):
    # Fault injection: the runner raises in one step, as an allocation failure would.
    real_execute, calls = loop.runner.execute, []

    def execute_failing_once(chunks):
        calls.append(len(chunks))
        if len(calls) == 3:
            raise RuntimeError("cannot allocate 1048576 bytes")
        return real_execute(chunks)

    monkeypatch.setattr(loop.runner, "execute", execute_failing_once)
    handles = [loop.submit(ids, greedy(20)) for ids in prompts[:2]]
    for handle in handles:
        with pytest.raises(EngineError, match=r"cannot allocate 1048576 bytes\); the request was ended and its KV"):
            handle.wait()
        assert handle.outcome.finish_reason == "error" and handle.outcome.num_output_tokens == 2
    assert all_blocks_free(loop)
    loop.kv.check_invariants()
    params = greedy(6)
    assert tokens(loop.submit(prompts[3], params)) == alone(engine, prompts[3], params)  # serves on


def test_cancel_while_waiting_and_twice_is_harmless(engine, prompts):
    loop = make_loop(engine, max_num_seqs=1)
    try:
        running = loop.submit(prompts[0], greedy(20))
        waiting = loop.submit(prompts[1], greedy(20))
        waiting.cancel()
        waiting.cancel()
        assert waiting.wait().finish_reason == "cancelled" and waiting.outputs == []
        assert running.wait().finish_reason == "length"
        assert all_blocks_free(loop)
    finally:
        loop.close()


def test_deadline_ends_a_request_with_finish_reason_deadline(engine, loop, prompts):
    handle = loop.submit(prompts[2], greedy(400), RequestOptions(timeout=0.3))
    outcome = handle.wait()
    assert outcome.finish_reason == "deadline" and outcome.num_output_tokens < 400
    assert 0.3 <= outcome.timings.total_s < 2.0
    assert all_blocks_free(loop)


def test_a_deadline_also_ends_a_request_still_waiting(engine, prompts):
    loop = make_loop(engine, max_num_seqs=1)
    try:
        running = loop.submit(prompts[2], greedy(60))
        next(running)
        waiting = loop.submit(prompts[1], greedy(10), RequestOptions(timeout=0.2))
        outcome = waiting.wait()
        assert outcome.finish_reason == "deadline" and waiting.outputs == []
        assert outcome.timings.first_token_s is None and outcome.timings.total_s >= 0.2
        assert running.wait().finish_reason == "length"
        assert all_blocks_free(loop)
    finally:
        loop.close()


def test_shared_prefix_is_computed_once(engine, loop):
    system = engine.tokenizer.encode("You are a careful assistant. " * 8)  # several full blocks
    first, second = system + engine.tokenizer.encode(" Hi!"), system + engine.tokenizer.encode(" Bye.")
    params = greedy(4)
    a = loop.submit(first, params)
    assert tokens(a) == alone(engine, first, params) and a.outcome.num_cached_tokens == 0
    b = loop.submit(second, params)
    assert tokens(b) == alone(engine, second, params)
    assert b.outcome.num_cached_tokens == len(system) // 16 * 16 >= 32
    stats = loop.stats()
    assert stats.prefix_hit_tokens == b.outcome.num_cached_tokens and stats.num_cached_blocks >= 2


def test_a_sliding_window_bounds_the_blocks_of_a_long_generation(engine, prompts):
    loop = make_loop(engine, sink_tokens=16, window_tokens=32)
    held: list[int] = []
    loop.hooks.add("on_token_generated", lambda e: held.append(loop.kv.num_used_blocks))  # on the loop thread
    try:
        params = greedy(80)
        prompt = prompts[2]
        assert len(prompt) + 80 > 6 * 16  # without the window it would hold 6+ blocks at the end
        handle = loop.submit(prompt, params)
        got = tokens(handle)
        assert handle.outcome.finish_reason == "length" and len(got) == 80
        assert max(held) <= 1 + 3 + 1  # the sink block, the window's blocks, the block being filled
        untrimmed = 16 + 32 - len(prompt)  # tokens generated before anything is dropped
        assert got[:untrimmed] == alone(engine, prompt, params)[:untrimmed]
        assert all_blocks_free(loop)
        loop.kv.check_invariants()
    finally:
        loop.close()


def test_hooks_fire_in_order_and_a_raising_hook_changes_nothing(engine, loop, prompts, caplog):
    events: list[tuple[str, str, object]] = []
    loop.hooks.add("on_sequence_start", lambda e: events.append(("start", e.request_id, e.tenant)))
    loop.hooks.add("on_token_generated", lambda e: events.append(("token", e.request_id, e.token_id)))
    loop.hooks.add("on_generation_complete", lambda e: events.append(("end", e.request_id, e.finish_reason)))

    def broken(event) -> None:
        raise RuntimeError("a hook bug")

    handles = [loop.hooks.add(name, broken) for name in ("on_sequence_start", "on_token_generated",
                                                         "on_generation_complete")]
    params = greedy(3)
    with caplog.at_level(logging.ERROR, logger="mcp.engine.hooks"):
        done = loop.submit(prompts[0], params, RequestOptions(tenant="acme", slo_class="high"))
        assert tokens(done) == alone(engine, prompts[0], params)
        cancelled = loop.submit(prompts[2], greedy(300))
        next(cancelled)
        cancelled.cancel()
        cancelled.wait()
    assert "a hook bug" in caplog.text and "RuntimeError" in caplog.text
    mine = [e for e in events if e[1] == done.request_id]
    assert mine == [("start", done.request_id, "acme"), *[("token", done.request_id, t) for t in
                                                          [s.token_id for s in done.outputs]],
                    ("end", done.request_id, "length")]
    theirs = [e[0] for e in events if e[1] == cancelled.request_id]
    assert theirs[0] == "start" and theirs[-1] == "end" and set(theirs[1:-1]) == {"token"}
    assert events[-1] == ("end", cancelled.request_id, "cancelled")
    for handle in handles:
        handle.remove()
    count = len(events)
    caplog.clear()
    tokens(loop.submit(prompts[1], greedy(2)))
    assert len(events) == count + 4 and "a hook bug" not in caplog.text  # removed: no longer called


def test_close_ends_running_requests_and_refuses_new_ones(engine, prompts):
    loop = make_loop(engine)
    handle = loop.submit(prompts[2], greedy(300))
    next(handle)
    completed = []
    loop.hooks.add("on_generation_complete", completed.append)
    loop.close()
    with pytest.raises(RequestCancelled, match="unloaded while this request ran"):
        handle.wait()
    assert handle.outcome.finish_reason == "cancelled" and [e.finish_reason for e in completed] == ["cancelled"]
    assert loop.closed and all_blocks_free(loop)
    with pytest.raises(InvalidRequestError, match="closed"):
        loop.submit(prompts[0], greedy(2))
    loop.close()  # idempotent


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda loop: loop.submit([], greedy(2)), InvalidRequestError, "the prompt is empty"),
    (lambda loop: loop.submit([1] * 9000, greedy(2)), ContextLengthError, "the context holds 8192"),
    (lambda loop: loop.submit([1, 10**6], greedy(2)), InvalidRequestError, r"token ids are integers in \[0, 49152\)"),
    (lambda loop: loop.submit("text", greedy(2)), InvalidRequestError, "prompt_ids must be a list"),
    (lambda loop: loop.submit([1, 2], {"max_tokens": 2}), InvalidRequestError, "expected SamplingParams"),
    (lambda loop: loop.submit([1, 2], greedy(2), RequestOptions(slo_class="urgent")), InvalidRequestError,
     "unknown SLO class 'urgent'; use one of critical, high, medium, low"),
    (lambda loop: loop.submit([1, 2], greedy(2), RequestOptions(tenant="")), InvalidRequestError, "tenant"),
    (lambda loop: loop.submit([1, 2], greedy(2), RequestOptions(timeout=-1)), InvalidRequestError, "timeout"),
    (lambda loop: loop.hooks.add("on_start", print), InvalidRequestError, "unknown hook 'on_start'"),
])
def test_bad_requests_are_refused_at_submit(loop, call, error, message):
    with pytest.raises(error, match=message):
        call(loop)
    assert tokens(loop.submit([1, 2, 3], greedy(2))) != []  # and the loop serves on

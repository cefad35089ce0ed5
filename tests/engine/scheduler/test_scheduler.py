"""The scheduler, step by step with hand-built outputs (no model), on a real KV block manager."""

from __future__ import annotations

import pytest

from mcp.base.errors import CapacityError, InvalidRequestError
from mcp.engine.kv.manager import KVCacheManager
from mcp.engine.scheduler.policy import FCFSPolicy, SLOPolicy
from mcp.engine.scheduler.request import Request, RequestStatus
from mcp.engine.scheduler.scheduler import Scheduler, SchedulerConfig
from mcp.engine.scheduler.slo import SLOClass

TOKEN = 7  # what the "model" samples every time


def make(num_blocks=64, block_size=4, policy=None, **config) -> Scheduler:
    kv = KVCacheManager(num_blocks=num_blocks, block_size=block_size, enable_prefix_caching=True)
    return Scheduler(kv, policy or SLOPolicy(), SchedulerConfig(**config))


def request(request_id, num_prompt=6, max_tokens=4, slo=SLOClass.MEDIUM, tenant="t", arrival=0.0, first=1, **kw):
    prompt = list(range(first, first + num_prompt))
    return Request(request_id, prompt, max_tokens, slo, tenant, arrival, **kw)


def step(scheduler: Scheduler, now: float):
    """One engine step: schedule, 'run' it, sample TOKEN for each chunk that samples."""
    output = scheduler.schedule(now)
    sampled = {c.request.request_id: TOKEN for c in output.chunks if c.samples}
    finished = scheduler.update(output, sampled, now)
    return {c.request.request_id: (c.start, c.num_tokens) for c in output.chunks}, output, finished


def test_prefill_is_chunked_under_the_token_budget_then_decodes_one_token_a_step():
    scheduler = make(max_num_batched_tokens=8)
    scheduler.add(request("a", num_prompt=20, max_tokens=3), now=0)
    assert [step(scheduler, t)[0] for t in range(5)] == [
        {"a": (0, 8)}, {"a": (8, 8)}, {"a": (16, 4)},  # the third chunk ends the prompt: first token
        {"a": (20, 1)}, {"a": (21, 1)},
    ]
    assert not scheduler.has_work()
    assert scheduler.kv.num_free_blocks == 64


def test_decode_and_a_new_prefill_share_one_step():
    scheduler = make(max_num_batched_tokens=8)
    scheduler.add(request("a", num_prompt=4, max_tokens=10), now=0)
    step(scheduler, 0)
    scheduler.add(request("b", num_prompt=12, max_tokens=2, first=100), now=1)
    chunks, output, _ = step(scheduler, 1)
    assert chunks == {"a": (4, 1), "b": (0, 7)}
    assert output.num_batched_tokens == 8


def test_max_tokens_finishes_and_frees_every_block_in_that_step():
    scheduler = make()
    scheduler.add(request("a", num_prompt=6, max_tokens=2), now=0)
    step(scheduler, 0)
    _, _, finished = step(scheduler, 1)
    assert [r.request_id for r in finished] == ["a"]
    assert finished[0].output_ids == [TOKEN, TOKEN] and finished[0].finish_reason == "length"
    assert finished[0].status is RequestStatus.FINISHED
    assert scheduler.kv.num_used_blocks == 0
    scheduler.kv.check_invariants()


def test_a_waiting_critical_request_preempts_the_lowest_running_one():
    scheduler = make(max_num_seqs=2)
    scheduler.add(request("low-1", slo=SLOClass.LOW, max_tokens=50, arrival=0), now=0)
    scheduler.add(request("low-2", slo=SLOClass.LOW, max_tokens=50, arrival=0.5, first=50), now=0.5)
    step(scheduler, 1)
    step(scheduler, 1.1)
    scheduler.add(request("crit", slo=SLOClass.CRITICAL, arrival=1.2, first=90), now=1.2)
    chunks, output, _ = step(scheduler, 1.2)
    # low-2 is due later than low-1 (it arrived later), so it is the one that goes
    assert [r.request_id for r in output.preempted] == ["low-2"]
    assert chunks == {"low-1": (7, 1), "crit": (0, 6)}
    low_2 = output.preempted[0]
    assert low_2.status is RequestStatus.WAITING and low_2.output_ids == [TOKEN, TOKEN]
    assert low_2.num_preemptions == 1
    resumed = []
    for t in range(6):  # crit finishes its 4 tokens; then low-2 recomputes prompt + outputs
        chunks, _, _ = step(scheduler, 1.3 + t / 10)
        resumed += [chunks["low-2"]] if "low-2" in chunks else []
        scheduler.kv.check_invariants()
    # its first block (4 prompt tokens) was still in the prefix cache; the other 2 prompt
    # tokens and its 2 kept outputs are recomputed in one chunk, then it decodes on
    assert resumed[0] == (4, 4) and resumed[1] == (8, 1)
    assert low_2.output_ids == [TOKEN] * 5


def test_fcfs_never_preempts_for_priority():
    scheduler = make(max_num_seqs=2, policy=FCFSPolicy())
    scheduler.add(request("low-1", slo=SLOClass.LOW, max_tokens=50), now=0)
    scheduler.add(request("low-2", slo=SLOClass.LOW, max_tokens=50, first=50), now=0)
    step(scheduler, 1)
    scheduler.add(request("crit", slo=SLOClass.CRITICAL, first=90), now=1.1)
    chunks, output, _ = step(scheduler, 1.1)
    assert output.preempted == [] and set(chunks) == {"low-1", "low-2"}


def test_running_out_of_blocks_preempts_the_lowest_class():
    # 6 blocks of 4 slots: two 8-token prompts take 2 blocks each; decoding needs more
    scheduler = make(num_blocks=6, block_size=4, max_num_seqs=4)
    scheduler.add(request("high", num_prompt=8, max_tokens=14, slo=SLOClass.HIGH), now=0)
    scheduler.add(request("low", num_prompt=8, max_tokens=14, slo=SLOClass.LOW, first=50), now=0)
    preempted = []
    for t in range(12):
        _, output, _ = step(scheduler, t / 10)
        preempted += [r.request_id for r in output.preempted]
        scheduler.kv.check_invariants()
    assert preempted and set(preempted) == {"low"}
    assert len(scheduler._requests["high"].output_ids) == 12


def test_one_tenants_flood_does_not_starve_another():
    scheduler = make(max_num_seqs=1, max_num_batched_tokens=64)
    for i in range(6):
        scheduler.add(request(f"flood-{i}", max_tokens=2, tenant="a", arrival=i / 100, first=10 * i), now=i / 100)
    order = []
    for t in range(40):
        if t == 2:  # tenant b arrives after a has been served a little
            scheduler.add(request("b-0", max_tokens=2, tenant="b", arrival=0.5, first=500), now=0.5)
            scheduler.add(request("b-1", max_tokens=2, tenant="b", arrival=0.5, first=600), now=0.5)
        _, _, finished = step(scheduler, 1 + t / 10)
        order += [r.request_id for r in finished]
    # b started level with the least-served tenant, so its requests interleave with a's
    assert order.index("b-0") < order.index("flood-2") and order.index("b-1") < order.index("flood-4")


def test_aging_lets_a_long_waiting_low_request_compete_as_critical():
    policy = SLOPolicy(aging_s=1.0)
    scheduler = make(max_num_seqs=1, policy=policy)
    scheduler.add(request("busy", max_tokens=30, slo=SLOClass.HIGH), now=0)
    scheduler.add(request("old-low", slo=SLOClass.LOW, first=40, arrival=0), now=0)
    step(scheduler, 0)
    scheduler.add(request("new-high", slo=SLOClass.HIGH, first=80, arrival=3.5), now=3.5)
    assert policy.effective_class(scheduler._requests["old-low"], 3.5) == SLOClass.CRITICAL
    # "busy" finishes at the 30th token; the aged low request goes next, ahead of new-high
    started = []
    for t in range(1, 40):
        chunks, _, _ = step(scheduler, 3.5 + t / 100)
        started += [rid for rid, (start, _) in chunks.items() if start == 0]
    assert started[:2] == ["old-low", "new-high"]


def test_admission_refuses_a_request_that_would_miss_its_ttft_when_the_queue_is_full():
    # prior step cost at 16 tokens ~67 ms: 5 x 300 tokens ahead is ~6.3 s, past medium's 5 s
    scheduler = make(num_blocks=512, max_num_seqs=1, max_num_batched_tokens=16, max_waiting=4)
    for i in range(4):
        scheduler.add(request(f"q-{i}", num_prompt=300, max_tokens=4, first=1000 * i), now=0)
    with pytest.raises(CapacityError, match="the engine is saturated: 4 requests wait") as refused:
        scheduler.add(request("late", num_prompt=300, max_tokens=4, slo=SLOClass.MEDIUM, first=9000), now=0)
    assert refused.value.retry_after_s > 0
    assert "late" not in scheduler._requests  # nothing half-accepted
    scheduler.add(request("vip", num_prompt=8, max_tokens=4, slo=SLOClass.CRITICAL, first=9500), now=0)
    assert scheduler.schedule(0).chunks[0].request.request_id == "vip"


def test_a_request_larger_than_the_cache_is_refused_outright():
    scheduler = make(num_blocks=4, block_size=4)
    with pytest.raises(CapacityError, match="needs more KV blocks than the cache holds"):
        scheduler.add(request("big", num_prompt=15, max_tokens=2), now=0)


def test_bad_requests_are_rejected_with_what_was_wrong():
    scheduler = make()
    scheduler.add(request("a"), now=0)
    with pytest.raises(InvalidRequestError, match="request id 'a' is already scheduled"):
        scheduler.add(request("a"), now=0)
    with pytest.raises(InvalidRequestError, match="at least one prompt token"):
        scheduler.add(Request("empty", [], 4), now=0)
    with pytest.raises(InvalidRequestError, match="'nope' is not scheduled"):
        scheduler.finish("nope", "cancelled")
    with pytest.raises(InvalidRequestError, match="unknown SLO class 'urgent'"):
        SLOClass.parse("urgent")
    assert SLOClass.parse("High") is SLOClass.HIGH


def test_cancel_and_deadline_free_blocks_in_the_same_step():
    scheduler = make()
    scheduler.add(request("cancel-me", max_tokens=50), now=0)
    scheduler.add(request("due", max_tokens=50, first=30, deadline_s=0.25), now=0)
    step(scheduler, 0.1)
    assert scheduler.kv.num_used_blocks > 0
    scheduler.finish("cancel-me", "cancelled")
    _, output, _ = step(scheduler, 0.3)
    assert [r.request_id for r in output.expired] == ["due"] and output.expired[0].finish_reason == "deadline"
    assert output.chunks == [] and scheduler.kv.num_used_blocks == 0
    scheduler.kv.check_invariants()


def test_a_shared_prompt_prefix_is_computed_once():
    scheduler = make(block_size=4)
    scheduler.add(request("first", num_prompt=13, max_tokens=2), now=0)
    step(scheduler, 0)
    scheduler.add(request("second", num_prompt=13, max_tokens=2), now=0.1)  # same 13 tokens
    chunks, _, _ = step(scheduler, 0.1)
    assert chunks["second"] == (12, 1)  # three full blocks cached: only the last token computed


def test_with_a_window_update_trims_each_sequence_and_admits_long_generations():
    kv = KVCacheManager(num_blocks=8, block_size=4, enable_prefix_caching=True, sink_tokens=4, window_tokens=8)
    scheduler = Scheduler(kv, SLOPolicy(), SchedulerConfig(max_num_batched_tokens=8))
    scheduler.add(request("a", num_prompt=6, max_tokens=60), now=0)  # 66 tokens: 17 blocks without the window
    held = []
    for t in range(40):
        step(scheduler, t)
        held.append(kv.num_used_blocks)
        kv.check_invariants()
    assert max(held) <= 1 + 3 + 1  # the sink block, the window's blocks, the one being filled
    table = kv.block_table("a")
    assert table[0] != -1 and table[1:6] == [-1] * 5  # the middle was freed
    assert kv.kept_positions("a")[0] == (0, 4)


def test_a_long_generation_is_refused_without_a_window_and_admitted_with_one():
    plain = make(num_blocks=8, block_size=4)
    with pytest.raises(CapacityError, match="needs more KV blocks than the cache holds"):
        plain.add(request("a", num_prompt=6, max_tokens=60), now=0)
    windowed = Scheduler(KVCacheManager(8, 4, sink_tokens=4, window_tokens=8), SLOPolicy(),
                         SchedulerConfig(max_num_batched_tokens=8))
    windowed.add(request("a", num_prompt=6, max_tokens=60), now=0)
    assert windowed.kv.peak_blocks(66, 8) == 1 + 4 + 1 and plain.kv.peak_blocks(66, 8) == 17

"""Step pacing and one rank order over running and waiting requests (no model).

The step-cost model is pinned to a prior it never moves from (no steps observed):
a step costs 20 ms plus 10 ms a token, so the arithmetic in each test can be read off.
"""

from __future__ import annotations

import pytest

from mcp.base.errors import CapacityError
from mcp.engine.kv.manager import KVCacheManager
from mcp.engine.scheduler.cost import StepCost, StepCostModel
from mcp.engine.scheduler.policy import FCFSPolicy, SLOPolicy
from mcp.engine.scheduler.request import Request
from mcp.engine.scheduler.scheduler import Scheduler, SchedulerConfig
from mcp.engine.scheduler.slo import SLOClass
from mcp.engine.scheduler.step import PacingConfig

COST = StepCost(base_s=0.020, per_token_s=0.010, per_sequence_s=0.0)
TOKEN = 7


def make(policy=None, pacing=None, **config) -> Scheduler:
    kv = KVCacheManager(num_blocks=256, block_size=4, enable_prefix_caching=True)
    return Scheduler(kv, policy or SLOPolicy(), SchedulerConfig(**config), StepCostModel(prior=COST), pacing)


def add(scheduler, request_id, slo, num_prompt=4, max_tokens=50, arrival=0.0, first=1):
    scheduler.add(Request(request_id, list(range(first, first + num_prompt)), max_tokens, slo, "t", arrival),
                  now=arrival)


def step(scheduler, now):
    output = scheduler.schedule(now)
    scheduler.update(output, {c.request.request_id: TOKEN for c in output.chunks if c.samples}, now)
    return {c.request.request_id: (c.start, c.num_tokens) for c in output.chunks}


def critical_and_lows(scheduler, num_lows=4):
    """A critical request and ``num_lows`` low ones, all prefilled at t=0 (first token at 0)."""
    add(scheduler, "crit", SLOClass.CRITICAL, first=500)
    for i in range(num_lows):
        add(scheduler, f"low-{i}", SLOClass.LOW, arrival=i / 1000, first=100 * i + 1)
    assert len(step(scheduler, 0.004)) == num_lows + 1


def test_lower_class_decodes_skip_a_step_that_would_make_a_critical_token_late():
    scheduler = make()
    critical_and_lows(scheduler)
    # crit's second token is due at 0.1 s; at 0.05 it allows 0.05 - 0.025 (margin) -> the
    # 0.05 s floor. crit alone costs 0.03 s; each low decode adds 0.01 s: two fit.
    assert step(scheduler, 0.05) == {"crit": (4, 1), "low-0": (4, 1), "low-1": (4, 1)}
    # the skipped ones keep their blocks; their next tokens are due sooner, so when crit is
    # tight again (its third token is due at 0.204 s) they go first among the lows
    assert scheduler.kv.block_table("low-2") and scheduler.kv.block_table("low-3")
    assert step(scheduler, 0.17) == {"crit": (5, 1), "low-2": (4, 1), "low-3": (4, 1)}


def test_slack_banked_by_a_fast_critical_request_lets_the_whole_batch_run():
    scheduler = make()
    critical_and_lows(scheduler)
    # at 0.005 crit's next token is 0.095 s away: allowance 0.07 s holds crit and all four lows
    assert len(step(scheduler, 0.005)) == 5


def test_a_lower_class_prefill_chunk_is_cut_to_what_fits():
    scheduler = make(max_num_batched_tokens=64)
    critical_and_lows(scheduler, num_lows=0)
    add(scheduler, "long-low", SLOClass.LOW, num_prompt=40, arrival=0.04, first=300)
    # allowance 0.05 s; crit's decode and the new sequence cost 0.03 s: 2 prompt tokens fit
    assert step(scheduler, 0.05) == {"crit": (4, 1), "long-low": (0, 2)}


def test_requests_of_one_class_never_hold_each_other_back():
    scheduler = make()
    add(scheduler, "crit-0", SLOClass.CRITICAL, first=1)
    for i in range(1, 6):
        add(scheduler, f"crit-{i}", SLOClass.CRITICAL, arrival=i / 1000, first=100 * i)
    step(scheduler, 0.01)
    # six decodes cost 0.08 s, past every allowance (0.05 s), and all six still run
    assert len(step(scheduler, 0.05)) == 6


@pytest.mark.parametrize("scheduler", [make(policy=FCFSPolicy()), make(pacing=PacingConfig(enabled=False))],
                         ids=["fcfs", "pacing-off"])
def test_without_pacing_every_running_request_decodes(scheduler):
    critical_and_lows(scheduler)
    assert len(step(scheduler, 0.05)) == 5


def test_a_waiting_critical_request_is_prefilled_before_a_running_lower_ones_chunk():
    scheduler = make(max_num_batched_tokens=16)
    add(scheduler, "long-low", SLOClass.LOW, num_prompt=64)
    assert step(scheduler, 0.0) == {"long-low": (0, 16)}
    add(scheduler, "crit", SLOClass.CRITICAL, num_prompt=10, arrival=0.1, first=500)
    # crit takes its whole prompt first; the running low prefill gets the rest of the budget
    # (its allowance, its TTFT 0.9 s away, is not tight)
    assert step(scheduler, 0.1) == {"crit": (0, 10), "long-low": (16, 6)}


def test_an_aged_low_request_is_no_longer_paced_behind_critical_work():
    scheduler = make(policy=SLOPolicy(aging_s=1.0))
    critical_and_lows(scheduler, num_lows=3)
    # at 3.05 s every low request has aged three classes: critical like crit, so nothing is paced
    assert len(step(scheduler, 3.05)) == 4


def test_pacing_rejects_nonsense_settings():
    with pytest.raises(ValueError, match="margin"):
        PacingConfig(margin=1.5)
    with pytest.raises(ValueError, match="min_allowance"):
        PacingConfig(min_allowance=0)


def test_admission_refuses_a_request_whose_class_could_not_decode_within_its_tpot():
    # 20 ms + 10 ms a sequence: nine critical decodes take 110 ms, past critical's 100 ms
    scheduler = make(max_waiting=2)
    for i in range(8):
        add(scheduler, f"crit-{i}", SLOClass.CRITICAL, arrival=0.0, first=100 * i)
    with pytest.raises(CapacityError, match=r"decode at ~110 ms a token, past its 100 ms target") as refused:
        add(scheduler, "one-more", SLOClass.CRITICAL, first=5000)
    assert refused.value.retry_after_s >= 0 and "one-more" not in scheduler._requests
    # a low request is held back by pacing, not by the critical ones: it is admitted
    add(scheduler, "low", SLOClass.LOW, first=6000)
    assert scheduler._requests["low"].status.value == "waiting"

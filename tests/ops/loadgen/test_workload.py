"""Workloads: seeded, Zipf popularity, class mix, burst window, mixed budgets, bad specs."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from mcp.base.errors import InvalidRequestError
from mcp.ops.loadgen.mix import parse_class_mix, parse_mix
from mcp.ops.loadgen.prompts import BUILTIN_PROMPTS
from mcp.ops.loadgen.workload import WorkloadSpec, build_workload, zipf_weights


def test_same_seed_same_workload_and_a_new_rate_keeps_everything_but_times():
    spec = WorkloadSpec("gamma", rate=4.0, burstiness=0.5, num_requests=200, seed=7)
    first, again = build_workload(spec), build_workload(spec)
    assert first == again
    faster = build_workload(spec.with_rate(8.0))
    assert [(r.prompt, r.slo_class, r.tenant, r.max_tokens) for r in faster] == \
        [(r.prompt, r.slo_class, r.tenant, r.max_tokens) for r in first]
    assert [2 * r.arrival_s for r in faster] == pytest.approx([r.arrival_s for r in first])
    assert build_workload(WorkloadSpec("gamma", 4.0, 0.5, num_requests=200, seed=8)) != first


def test_zipf_popularity_follows_the_pool_order():
    spec = WorkloadSpec("bursty-zipf", rate=50.0, num_requests=20_000, seed=3)
    counts = collections.Counter(r.prompt_index for r in build_workload(spec))
    shares = np.array([counts[i] for i in range(len(BUILTIN_PROMPTS))]) / 20_000
    expected = zipf_weights(len(BUILTIN_PROMPTS), 1.2)
    assert expected[0] / expected[1] == pytest.approx(2 ** 1.2)
    assert shares[:5] == pytest.approx(expected[:5], abs=0.01)
    assert list(shares[:4]) == sorted(shares[:4], reverse=True)
    assert all(r.prompt == BUILTIN_PROMPTS[r.prompt_index] for r in build_workload(spec)[:50])


def test_other_scenarios_draw_prompts_uniformly():
    counts = collections.Counter(r.prompt_index for r in build_workload(WorkloadSpec("poisson", 50.0, num_requests=24_000)))
    assert max(counts.values()) / min(counts.values()) < 1.15


def test_bursty_scenario_triples_the_rate_in_the_middle_fifth():
    spec = WorkloadSpec("bursty-zipf", rate=20.0, duration_s=500.0, seed=1)
    times = np.array([r.arrival_s for r in build_workload(spec)])
    assert times.max() < 500.0
    inside = np.sum((times >= 200) & (times < 300)) / 100.0
    before = np.sum(times < 200) / 200.0
    after = np.sum(times >= 300) / 200.0
    assert before == pytest.approx(20.0, rel=0.05) and after == pytest.approx(20.0, rel=0.05)
    assert inside == pytest.approx(60.0, rel=0.05)


def test_bursty_scenario_without_a_duration_places_the_burst_in_n_over_the_mean_rate():
    spec = WorkloadSpec("bursty-zipf", rate=10.0, num_requests=7000, seed=2)
    # mean rate 10 x (0.8 + 3 x 0.2) = 14/s: 7000 requests take 500 s, the burst is 200-300 s
    assert spec.nominal_duration_s == pytest.approx(500.0)
    times = np.array([r.arrival_s for r in build_workload(spec)])
    assert len(times) == 7000 and times.max() == pytest.approx(500.0, rel=0.03)
    assert np.sum((times >= 200) & (times < 300)) == pytest.approx(3000, rel=0.06)


def test_class_and_tenant_mix_frequencies():
    spec = WorkloadSpec("poisson", 10.0, num_requests=20_000, seed=5,
                        class_mix=parse_class_mix("critical=1,high=1,low=2"), tenants=parse_mix("a=3,b=1", "--tenants"))
    requests = build_workload(spec)
    classes = collections.Counter(r.slo_class for r in requests)
    tenants = collections.Counter(r.tenant for r in requests)
    assert set(classes) == {"critical", "high", "low"}
    assert classes["low"] / 20_000 == pytest.approx(0.5, abs=0.015)
    assert classes["critical"] / 20_000 == pytest.approx(0.25, abs=0.015)
    assert tenants["a"] / 20_000 == pytest.approx(0.75, abs=0.015)


def test_mixed_scenario_mixes_budgets_and_others_keep_max_tokens():
    budgets = collections.Counter(r.max_tokens for r in build_workload(WorkloadSpec("mixed", 5.0, num_requests=10_000, max_tokens=64)))
    assert set(budgets) == {16, 32, 64}
    assert budgets[16] / 10_000 == pytest.approx(0.4, abs=0.02)
    assert {r.max_tokens for r in build_workload(WorkloadSpec("poisson", 5.0, num_requests=100, max_tokens=64))} == {64}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scenario": "steady"}, "unknown scenario 'steady'; use one of poisson, gamma, bursty-zipf, mixed"),
        ({"num_requests": None}, "give --num-requests or --duration"),
        ({"num_requests": 0}, "--num-requests must be positive"),
        ({"duration_s": -1.0}, "--duration must be positive"),
        ({"max_tokens": 0}, "--max-tokens must be positive"),
        ({"burstiness": 0.5}, "--burstiness applies to the gamma and bursty-zipf scenarios"),
        ({"rate": -2.0}, "rate must be a positive number"),
        ({"prompts": ()}, "the prompt pool is empty"),
    ],
)
def test_bad_specs_say_what_to_fix(kwargs, message):
    with pytest.raises(InvalidRequestError, match=message):
        WorkloadSpec(**{"scenario": "poisson", "rate": 1.0, "num_requests": 10, **kwargs})

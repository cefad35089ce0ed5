"""Sampling parameters' validation and the sampler's processing steps, with exact values."""

from __future__ import annotations

import dataclasses
import math
import re

import pytest
import torch

from mcp.base.errors import InvalidRequestError
from mcp.engine import sampler as sampler_module
from mcp.engine.sampler import Sampler, SampledToken, SamplingParams, apply_penalties, filter_logits, first_argmax

# Probabilities 0.5, 0.3, 0.15, 0.05 (sum 1), as logits.
CRAFTED = torch.tensor([0.5, 0.3, 0.15, 0.05]).log()


def kept(survivors: tuple[torch.Tensor, torch.Tensor]) -> set[int]:
    logits, ids = survivors
    assert torch.isfinite(logits).all()
    return set(ids.tolist())


def draw(params: SamplingParams, logits: torch.Tensor, num: int) -> list[int]:
    sampler = Sampler(params)
    return [sampler.sample(logits, [], []).token_id for _ in range(num)]


def random_logits(seed: int, vocab: int = 1000) -> torch.Tensor:
    return torch.randn(vocab, generator=torch.Generator().manual_seed(seed)) * 3


def test_greedy_picks_argmax_and_lowest_id_on_ties() -> None:
    greedy = Sampler(SamplingParams(temperature=0))
    logits = random_logits(1)
    assert greedy.sample(logits, [], []).token_id == int(logits.argmax())
    tied = torch.tensor([0.0, 3.0, 1.0, 3.0, 3.0])
    assert greedy.sample(tied, [], []).token_id == 1


def test_first_argmax_is_torch_argmax_ties_nan_and_views_included() -> None:
    for seed in range(20):
        logits = random_logits(seed, 49152)
        assert first_argmax(logits) == int(torch.argmax(logits))
    assert first_argmax(torch.tensor([2.0, 5.0, 5.0, -1.0])) == 1  # the first of a tie
    assert first_argmax(torch.tensor([1.0, math.nan, 9.0, math.nan])) == 1  # NaN is the max
    assert first_argmax(torch.tensor([-math.inf, -math.inf])) == 0
    rows = torch.tensor([[0.0, 7.0], [3.0, 1.0], [2.0, 9.0]])
    assert first_argmax(rows[:, 1]) == 2  # a strided view
    assert first_argmax(torch.tensor([1.0, 4.0, 2.0], dtype=torch.float64).cumsum(0)) == 2


def test_same_seed_same_tokens_different_seeds_differ() -> None:
    logits = random_logits(2) / 3  # a flat distribution: many plausible tokens
    first = draw(SamplingParams(temperature=1.0, seed=1234), logits, 40)
    again = draw(SamplingParams(temperature=1.0, seed=1234), logits, 40)
    other = draw(SamplingParams(temperature=1.0, seed=4321), logits, 40)
    assert first == again
    assert first != other
    assert len(set(first)) > 10


def test_top_k_one_equals_greedy() -> None:
    for seed in range(5):
        logits = random_logits(seed)
        tokens = draw(SamplingParams(temperature=1.5, top_k=1, seed=seed), logits, 5)
        assert tokens == [int(logits.argmax())] * 5


def test_top_k_restricts_the_support() -> None:
    logits = torch.tensor([1.0, 4.0, 0.5, 3.9, 3.8, 2.0, 3.7])
    tokens = draw(SamplingParams(temperature=1.0, top_k=3, seed=0), logits, 600)
    assert set(tokens) == {1, 3, 4}
    assert kept(filter_logits(logits, SamplingParams(top_k=3))) == {1, 3, 4}


@pytest.mark.parametrize(
    ("top_p", "expected"), [(0.01, {0}), (0.45, {0}), (0.75, {0, 1}), (0.9, {0, 1, 2}), (0.99, {0, 1, 2, 3})]
)
def test_top_p_keeps_smallest_set_reaching_p(top_p: float, expected: set[int]) -> None:
    shuffled = CRAFTED[[2, 0, 3, 1]]  # ids 0..3 now hold probabilities 0.15, 0.5, 0.05, 0.3
    remap = {0: 1, 1: 3, 2: 0, 3: 2}
    assert kept(filter_logits(shuffled, SamplingParams(top_p=top_p))) == {remap[i] for i in expected}
    assert set(draw(SamplingParams(top_p=top_p, seed=3), shuffled, 400)) == {remap[i] for i in expected}


@pytest.mark.parametrize(
    ("min_p", "expected"), [(0.05, {0, 1, 2, 3}), (0.2, {0, 1, 2}), (0.5, {0, 1}), (0.9, {0})]
)
def test_min_p_drops_tokens_below_fraction_of_max(min_p: float, expected: set[int]) -> None:
    assert kept(filter_logits(CRAFTED, SamplingParams(min_p=min_p))) == expected
    assert set(draw(SamplingParams(min_p=min_p, seed=5), CRAFTED, 400)) == expected


def reference_top_p(logits: torch.Tensor, top_p: float) -> set[int]:
    """Top-p by the definition, one token at a time."""
    probs = torch.softmax(logits.double(), -1)
    order = torch.argsort(probs, descending=True).tolist()
    chosen, mass = set(), 0.0
    for token in order:
        chosen.add(token)
        mass += float(probs[token])
        if mass >= top_p:
            return chosen
    return chosen


@pytest.mark.parametrize("head", [1, 7, 1024])  # the few-candidates shortcut and the full sort
@pytest.mark.parametrize("top_p", [0.3, 0.9, 0.999])
def test_top_p_matches_definition_on_random_logits(head: int, top_p: float, monkeypatch) -> None:
    monkeypatch.setattr(sampler_module, "_TOP_P_HEAD", head)
    for seed in range(4):
        logits = random_logits(seed, vocab=200)
        assert kept(filter_logits(logits, SamplingParams(top_p=top_p))) == reference_top_p(logits, top_p)


def test_samples_follow_the_distribution() -> None:
    counts = torch.bincount(torch.tensor(draw(SamplingParams(seed=21), CRAFTED, 4000)), minlength=4)
    frequencies = (counts / 4000).tolist()
    for got, want in zip(frequencies, [0.5, 0.3, 0.15, 0.05]):
        assert abs(got - want) < 0.025


def test_zero_probability_tokens_are_never_drawn() -> None:
    logits = torch.full((64,), -math.inf)
    logits[[0, 5, 9]] = torch.tensor([0.0, 1.0, 0.5])  # the tail, ids 10..63, is impossible
    assert set(draw(SamplingParams(seed=8), logits, 500)) == {0, 5, 9}


def test_top_p_applies_to_the_top_k_renormalized_distribution() -> None:
    logits = torch.tensor([0.4, 0.3, 0.2, 0.1]).log()
    # After top-k=2 the probabilities are 4/7 and 3/7, so top-p 0.55 keeps only id 0;
    # over the full distribution it would keep ids 0 and 1.
    assert kept(filter_logits(logits, SamplingParams(top_k=2, top_p=0.55))) == {0}
    assert kept(filter_logits(logits, SamplingParams(top_p=0.55))) == {0, 1}


def test_temperature_scales_the_distribution() -> None:
    logits = torch.tensor([2.0, 1.0, 0.0])
    filtered, ids = filter_logits(logits, SamplingParams(temperature=0.5))
    assert ids.tolist() == [0, 1, 2]
    assert torch.allclose(torch.softmax(filtered, -1), torch.softmax(logits / 0.5, -1))
    tiny, _ = filter_logits(logits, SamplingParams(temperature=1e-30))
    assert torch.equal(torch.softmax(tiny, -1), torch.tensor([1.0, 0.0, 0.0]))
    assert draw(SamplingParams(temperature=1e-30, seed=0), logits, 20) == [0] * 20


def test_repetition_penalty_divides_positive_and_multiplies_negative() -> None:
    logits = torch.tensor([2.0, -2.0, 1.0, -1.0, 0.5])
    out = apply_penalties(logits, [0, 3], [1, 0], SamplingParams(repetition_penalty=2.0))
    assert out.tolist() == [1.0, -4.0, 1.0, -2.0, 0.5]
    assert logits.tolist() == [2.0, -2.0, 1.0, -1.0, 0.5]  # the input is left alone


def test_presence_and_frequency_penalties_count_generated_ids_only() -> None:
    logits = torch.tensor([2.0, -2.0, 1.0, -1.0, 0.5])
    params = SamplingParams(presence_penalty=0.5, frequency_penalty=0.25)
    out = apply_penalties(logits, [0, 3], [1, 1, 2, 1], params)
    assert out.tolist() == [2.0, -2.0 - 0.5 - 0.75, 1.0 - 0.5 - 0.25, -1.0, 0.5]


def test_repetition_then_presence_and_frequency() -> None:
    logits = torch.tensor([2.0, -2.0, 1.0, -1.0, 0.5])
    params = SamplingParams(repetition_penalty=2.0, presence_penalty=0.5, frequency_penalty=0.25)
    out = apply_penalties(logits, [0], [1, 1, 2], params)
    assert out.tolist() == [1.0, -5.0, -0.25, -1.0, 0.5]


def test_penalties_steer_greedy_choice() -> None:
    logits = torch.tensor([3.0, 2.9, 0.0])
    plain = Sampler(SamplingParams(temperature=0)).sample(logits, [], [0])
    penalized = Sampler(SamplingParams(temperature=0, frequency_penalty=0.2)).sample(logits, [], [0])
    assert (plain.token_id, penalized.token_id) == (0, 1)


def test_logprobs_are_raw_log_softmax_with_top_n_descending() -> None:
    logits = random_logits(9, vocab=300)
    params = SamplingParams(temperature=0.7, top_k=5, repetition_penalty=1.3, logprobs=4, seed=1)
    result = Sampler(params).sample(logits, [1, 2, 3], [4])
    raw = torch.log_softmax(logits, -1)
    assert result.logprob == float(raw[result.token_id])
    values, ids = torch.topk(raw, 4)
    assert result.top_logprobs == tuple(zip(ids.tolist(), values.tolist()))
    assert [v for _, v in result.top_logprobs] == sorted((v for _, v in result.top_logprobs), reverse=True)


def test_logprobs_zero_and_off() -> None:
    logits = random_logits(10, vocab=50)
    zero = Sampler(SamplingParams(temperature=0, logprobs=0)).sample(logits, [], [])
    assert zero == SampledToken(int(logits.argmax()), float(torch.log_softmax(logits, -1).max()), ())
    off = Sampler(SamplingParams(temperature=0)).sample(logits, [], [])
    assert off == SampledToken(int(logits.argmax()), None, ())


def test_logits_must_be_one_position() -> None:
    message = r"logits must be one position's \[vocab\] vector, got shape \(1, 4\)"
    with pytest.raises(ValueError, match=message):
        Sampler(SamplingParams()).sample(torch.zeros(1, 4), [], [])


SEED_RANGE = r"seed must be an integer in \[-2\*\*63, 2\*\*64 - 1\]"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("max_tokens", 0, r"max_tokens must be an integer in \[1, 2147483647\], got 0"),
        ("max_tokens", True, r"max_tokens must be an integer in \[1, 2147483647\], got True"),
        ("max_tokens", 2.0, r"max_tokens must be an integer in \[1, 2147483647\], got 2.0"),
        ("max_tokens", 2**31, r"max_tokens must be an integer in \[1, 2147483647\], got 2147483648"),
        ("temperature", -1.0, "temperature must be >= 0, got -1.0"),
        ("temperature", math.nan, "temperature must be >= 0, got nan"),
        ("temperature", math.inf, "temperature must be >= 0, got inf"),
        ("temperature", "hot", "temperature must be a number >= 0, got 'hot'"),
        ("temperature", False, "temperature must be a number >= 0, got False"),
        ("top_k", -1, r"top_k must be an integer in \[0, 2147483647\] \(0 = off\), got -1"),
        ("top_k", 10**29, r"top_k must be an integer in \[0, 2147483647\] \(0 = off\), got 10{29}"),
        ("top_p", 1.5, r"top_p must be in \(0, 1\], got 1.5"),
        ("top_p", 0.0, r"top_p must be in \(0, 1\], got 0.0"),
        ("top_p", math.nan, r"top_p must be in \(0, 1\], got nan"),
        ("min_p", 1.0, r"min_p must be in \[0, 1\), got 1.0"),
        ("min_p", -0.1, r"min_p must be in \[0, 1\), got -0.1"),
        ("repetition_penalty", 0.0, "repetition_penalty must be > 0, got 0.0"),
        ("presence_penalty", 2.5, r"presence_penalty must be in \[-2, 2\], got 2.5"),
        ("frequency_penalty", -3, r"frequency_penalty must be in \[-2, 2\], got -3"),
        ("seed", 2**64, SEED_RANGE + r" or None, got 18446744073709551616"),
        ("seed", -(2**63) - 1, SEED_RANGE + r" or None, got -9223372036854775809"),
        ("seed", "7", SEED_RANGE + r" or None, got '7'"),
        ("logprobs", 21, r"logprobs must be an integer in \[0, 20\] or None, got 21"),
        ("logprobs", -1, r"logprobs must be an integer in \[0, 20\] or None, got -1"),
        ("stop", ["a"], "stop must be a tuple of strings, got list"),
        ("stop", ("\udcff",), r"stop\[0\] is not valid UTF-8"),
        ("stop", ("ok", ""), r"stop\[1\] must be a non-empty string, got ''"),
        ("stop", ("ok", 3), r"stop\[1\] must be a non-empty string, got 3"),
        ("stop", tuple("abcdefghijklmnopq"), "stop may hold at most 16 strings, got 17"),
        ("stop_token_ids", (1, -2), r"stop_token_ids\[1\] must be a token id in \[0, 2147483647\], got -2"),
        ("stop_token_ids", (2**64,), r"stop_token_ids\[0\] must be a token id in \[0, 2147483647\], got 1844"),
        ("stop_token_ids", [1], "stop_token_ids must be a tuple of token ids, got list"),
        ("ignore_eos", 1, "ignore_eos must be true or false, got 1"),
    ],
)
def test_validation_errors(field: str, value: object, message: str) -> None:
    with pytest.raises(InvalidRequestError, match=f"^{message}"):
        SamplingParams(**{field: value})


def test_valid_params_are_normalized_and_frozen() -> None:
    params = SamplingParams(temperature=0, top_p=1, presence_penalty=-2, seed=-5, logprobs=20)
    assert (params.temperature, params.top_p, params.presence_penalty) == (0.0, 1.0, -2.0)
    assert isinstance(params.temperature, float)
    with pytest.raises(dataclasses.FrozenInstanceError):
        params.temperature = 1.0  # type: ignore[misc]


def test_from_user_accepts_lists_single_strings_and_none() -> None:
    params = SamplingParams.from_user(stop="END", stop_token_ids=[2, 3], temperature=None, max_tokens=8)
    assert params == SamplingParams(stop=("END",), stop_token_ids=(2, 3), max_tokens=8)
    assert SamplingParams.from_user(stop=["a", "b"]).stop == ("a", "b")
    assert SamplingParams.from_user(stop=None).stop == ()
    with pytest.raises(InvalidRequestError, match=r"stop\[0\] is not valid UTF-8"):
        SamplingParams.from_user(stop="\udcff")
    message = "^unknown sampling parameter 'best_of'; known: frequency_penalty, ignore_eos, "
    with pytest.raises(InvalidRequestError, match=message):
        SamplingParams.from_user(best_of=2)


def test_unseeded_samplers_draw_independently() -> None:
    logits = random_logits(11) / 3
    assert draw(SamplingParams(), logits, 30) != draw(SamplingParams(), logits, 30)


@pytest.mark.cuda
def test_cuda_sampler_is_reproducible_and_greedy_matches_cpu() -> None:
    logits = random_logits(12, vocab=5000)
    params = SamplingParams(top_k=40, top_p=0.9, repetition_penalty=1.2, seed=77, logprobs=3)
    first, again = Sampler(params, "cuda"), Sampler(params, "cuda")
    tokens = [first.sample(logits.cuda(), [1, 2], [3]).token_id for _ in range(20)]
    assert tokens == [again.sample(logits.cuda(), [1, 2], [3]).token_id for _ in range(20)]
    greedy = SamplingParams(temperature=0)
    on_gpu = Sampler(greedy, "cuda").sample(logits.cuda(), [], []).token_id
    assert on_gpu == Sampler(greedy).sample(logits, [], []).token_id


@pytest.mark.parametrize("engine", ["torch", "lean"])
def test_a_vanishing_repetition_penalty_still_samples_a_seen_token(engine: str) -> None:
    """repetition_penalty=5e-324 (> 0, so valid) divided the seen positive logits to inf; inf - inf
    made every filter's logits NaN and min-p kept nothing: the engine step failed (an attack rerun
    of issue 28 found it as a 500). The penalized logits now stay finite, so the most favoured
    seen token wins."""
    params = SamplingParams(temperature=1.0, repetition_penalty=5e-324, top_p=5e-324, min_p=5e-324, seed=1)
    logits = torch.tensor([2.0, -1.0, 3.0, 0.5, -0.2])
    seen = [0, 1, 3]  # of these only 0 and 3 have positive logits, which the penalty sends to the top
    if engine == "torch":
        survivors = filter_logits(apply_penalties(logits, seen, [], params), params)
        token = Sampler(params).sample(logits, seen, []).token_id
    else:
        from mcp.engine.lean import sampling

        penalized = sampling.apply_penalties(logits.numpy(), seen, [], params)
        survivors = tuple(torch.from_numpy(part) for part in sampling.filter_logits(penalized, params))
        token = sampling.Sampler(params).sample(logits.numpy(), seen, []).token_id
    assert kept(survivors) and kept(survivors) <= {0, 3}
    assert token in (0, 3)


def test_logit_bias_is_added_before_penalties_in_both_samplers() -> None:
    import numpy as np

    from mcp.engine.lean.sampling import Sampler as LeanSampler
    from mcp.engine.lean.sampling import apply_penalties as lean_penalties

    logits = torch.tensor([2.0, 1.0, 0.5, -1.0])
    params = SamplingParams.from_user(logit_bias={3: 4.0, 0: -100, 99: 50.0})  # 99: past the vocabulary, no effect
    assert params.logit_bias == ((0, -100), (3, 4.0), (99, 50.0))
    expected = [-98.0, 1.0, 0.5, 3.0]
    assert apply_penalties(logits, [], [], params).tolist() == expected
    assert lean_penalties(logits.numpy(), [], [], params).tolist() == expected
    greedy = SamplingParams.from_user(temperature=0, logit_bias={3: 4.0})
    assert Sampler(greedy).sample(logits, [], []).token_id == 3
    assert LeanSampler(greedy).sample(np.asarray(logits.numpy()), [], []).token_id == 3
    assert Sampler(greedy).sample(logits, [], []).token_id == 3 and logits.tolist()[3] == -1.0  # raw logits kept


@pytest.mark.parametrize("bias,words", [({1: 100.5}, "in [-100, 100]"), ({-1: 1.0}, "token id"),
                                        ({1: float("nan")}, "in [-100, 100]"), ({i: 1.0 for i in range(301)}, "300")])
def test_logit_bias_out_of_bounds_is_refused(bias, words) -> None:
    with pytest.raises(InvalidRequestError, match=re.escape(words)):
        SamplingParams.from_user(logit_bias=bias)

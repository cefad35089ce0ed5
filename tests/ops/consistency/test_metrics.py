"""The comparison figures on hand-built outputs: no model needed."""

from __future__ import annotations

import torch

from mcp.backends.base import Generation, Scores, top_from_logits
from mcp.ops.consistency.metrics import (
    PromptComparison, ReferenceRecord, compare_greedy, compare_scores, cut_after_eos, summarize,
)
from mcp.ops.consistency.tolerances import Rule, evaluate


def _reference(logits: torch.Tensor, greedy=(5, 6, 7)) -> ReferenceRecord:
    return ReferenceRecord("p", (1, 2), tuple(greedy), logits, top_from_logits(logits, 3))


def test_identical_logits_agree_perfectly():
    logits = torch.randn(6, 50)
    figures = compare_scores(_reference(logits), Scores(logits=logits.clone()))
    assert figures["top1_agree"] == 6 and figures["mse"] == 0.0
    assert abs(figures["kl"]) < 1e-6 and figures["topk_logprob_mae"] < 1e-6


def test_a_golden_reference_without_logits_still_gives_top1_and_logprob_error():
    logits = torch.randn(4, 50)
    golden = ReferenceRecord("p", (1,), (2,), None, top_from_logits(logits, 3))
    shifted = logits.clone()
    shifted[0] = -logits[0]
    figures = compare_scores(golden, Scores(logits=shifted))
    assert figures["top1_agree"] == 3 and figures["mse"] is None and figures["topk_logprob_mae"] > 0.1


def test_greedy_match_and_first_divergence():
    ref = _reference(torch.zeros(5, 10), greedy=(5, 6, 7, 8))
    assert compare_greedy(ref, Generation((5, 6, 9, 8), "", 0.4))["first_divergence"] == 2
    same = compare_greedy(ref, Generation((5, 6, 7, 8), "", 0.4))
    assert same["first_divergence"] is None and same["num_matched_tokens"] == 4
    assert compare_greedy(ref, Generation((5, 6), "", 0.1))["first_divergence"] == 2


def test_continuations_are_cut_after_the_first_eos():
    assert cut_after_eos([4, 2, 9, 2], frozenset({2})) == (4, 2)
    assert cut_after_eos([4, 9], frozenset({2})) == (4, 9)


def _row(top1, positions, matched, divergence):
    return PromptComparison("p", positions, top1, 0.0, 0.001, 0.01, 4, matched, divergence, 4, 0.2)


def test_summary_and_bounds():
    summary = summarize([_row(10, 10, 4, None), _row(5, 10, 2, 2)])
    assert summary.top1_agreement == 0.75 and summary.token_match == 0.75
    assert summary.first_divergence == 2 and summary.num_prompts_diverged == 1 and summary.ms_per_token == 50.0
    rule = Rule("*", "*", "", (("min_top1_agreement", 0.8), ("max_kl", 0.01), ("max_mse", 1.0)))
    assert [c.passed for c in evaluate(rule, summary)] == [False, True, True]
    no_scores = summarize([PromptComparison("p", 0, 0, None, None, None, 4, 4, None, 4, 0.1)])
    assert evaluate(rule, no_scores)[0].passed is None  # not applicable, never "passed"

"""Comparing one candidate's outputs with the reference's, per prompt, then over a suite.

Teacher-forced metrics read both engines' predictions over the same sequence (the prompt
plus the reference's greedy continuation), so one early divergence cannot spoil the rest:
top-1 agreement (same next token), logits MSE and KL(reference || candidate) where both have
full logits, and the mean |logprob difference| over the reference's top-k tokens (the one a
golden file, which holds top-k only, still allows). Greedy metrics compare continuations
token by token: the match rate and the first position where they differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from mcp.backends.base import Generation, Scores, TopLogprobs


@dataclass(frozen=True)
class ReferenceRecord:
    """What the reference produced for one prompt (from an engine or a golden file)."""

    prompt_id: str
    prompt_ids: tuple[int, ...]
    greedy_ids: tuple[int, ...]  # the continuation, cut after the first EOS
    logits: torch.Tensor | None  # [T, vocab] over prompt_ids + greedy_ids, when known
    top: tuple[TopLogprobs, ...]  # T entries: the reference's top-k at every position


@dataclass(frozen=True)
class PromptComparison:
    prompt_id: str
    num_positions: int  # teacher-forced positions compared (0: the candidate gives no scores)
    top1_agree: int
    mse: float | None
    kl: float | None
    topk_logprob_mae: float | None
    num_reference_tokens: int
    num_matched_tokens: int
    first_divergence: int | None  # None: the continuations are the same
    num_generated: int
    generate_seconds: float


def compare_scores(reference: ReferenceRecord, scores: Scores) -> dict:
    """Teacher-forced metrics of one prompt; the candidate gives full logits or top-k."""
    if scores.logits is not None:
        return _compare_logits(reference, scores.logits.float())
    return {"num_positions": len(scores.top), "top1_agree": _top1_from_top(reference.top, scores.top),
            "mse": None, "kl": None, "topk_logprob_mae": None}


def _compare_logits(reference: ReferenceRecord, logits: torch.Tensor) -> dict:
    cand_logp = torch.log_softmax(logits, -1)  # [T, vocab]
    ref_top1 = torch.tensor([top.token_ids[0] for top in reference.top])
    metrics = {"num_positions": logits.shape[0], "top1_agree": int((logits.argmax(-1) == ref_top1).sum()),
               "topk_logprob_mae": _topk_mae(reference.top, cand_logp), "mse": None, "kl": None}
    if reference.logits is not None:
        ref = reference.logits.float()
        ref_logp = torch.log_softmax(ref, -1)
        metrics["mse"] = (ref - logits).pow(2).mean().item()
        metrics["kl"] = (ref_logp.exp() * (ref_logp - cand_logp)).sum(-1).mean().item()
    return metrics


def _topk_mae(reference_top: Sequence[TopLogprobs], cand_logp: torch.Tensor) -> float:
    ids = torch.tensor([top.token_ids for top in reference_top])  # [T, k]
    ref_lp = torch.tensor([top.logprobs for top in reference_top])
    return (cand_logp.gather(1, ids) - ref_lp).abs().mean().item()


def _top1_from_top(reference_top: Sequence[TopLogprobs], candidate_top: Sequence[TopLogprobs]) -> int:
    return sum(r.token_ids[0] == c.token_ids[0] for r, c in zip(reference_top, candidate_top))


def compare_greedy(reference: ReferenceRecord, generation: Generation) -> dict:
    """Token match over the reference's continuation and the first position that differs."""
    ref, cand = reference.greedy_ids, generation.token_ids
    matched = sum(a == b for a, b in zip(ref, cand))
    first = next((i for i, (a, b) in enumerate(zip(ref, cand)) if a != b), None)
    if first is None and len(cand) < len(ref):
        first = len(cand)
    return {"num_reference_tokens": len(ref), "num_matched_tokens": matched, "first_divergence": first,
            "num_generated": len(cand), "generate_seconds": generation.seconds}


def cut_after_eos(ids: Sequence[int], eos_ids: frozenset[int]) -> tuple[int, ...]:
    """The continuation up to and including its first EOS: what follows it is not an answer."""
    for index, token in enumerate(ids):
        if token in eos_ids:
            return tuple(ids[: index + 1])
    return tuple(ids)


@dataclass(frozen=True)
class Summary:
    """One candidate over the whole suite; None where no prompt gave the figure."""

    num_positions: int
    top1_agreement: float | None
    mse: float | None
    kl: float | None
    topk_logprob_mae: float | None
    token_match: float
    first_divergence: int | None  # the earliest over all prompts
    num_prompts_diverged: int
    ms_per_token: float


def summarize(rows: Sequence[PromptComparison]) -> Summary:
    positions = sum(r.num_positions for r in rows)
    ref_tokens = sum(r.num_reference_tokens for r in rows)
    divergences = [r.first_divergence for r in rows if r.first_divergence is not None]
    generated = sum(r.num_generated for r in rows)
    return Summary(
        num_positions=positions,
        top1_agreement=sum(r.top1_agree for r in rows) / positions if positions else None,
        mse=_weighted(rows, "mse"), kl=_weighted(rows, "kl"), topk_logprob_mae=_weighted(rows, "topk_logprob_mae"),
        token_match=sum(r.num_matched_tokens for r in rows) / ref_tokens if ref_tokens else 1.0,
        first_divergence=min(divergences) if divergences else None,
        num_prompts_diverged=len(divergences),
        ms_per_token=1000 * sum(r.generate_seconds for r in rows) / max(generated, 1),
    )


def _weighted(rows: Sequence[PromptComparison], field: str) -> float | None:
    """The mean over all positions of a per-prompt mean (weighted by the prompt's positions)."""
    known = [(getattr(r, field), r.num_positions) for r in rows if getattr(r, field) is not None]
    total = sum(n for _, n in known)
    return sum(v * n for v, n in known) / total if total else None

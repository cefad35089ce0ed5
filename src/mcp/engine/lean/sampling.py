"""The per-sequence sampler of the lean decoder, in numpy: the steps of ``mcp.engine.sampler``
in the same order (penalties, greedy or temperature, top-k, top-p, min-p, one inverse-CDF
draw), on float32 logits [vocab].

Greedy picks the same token as the PyTorch sampler (the first largest penalized logit).
A seeded draw is reproducible here, but comes from numpy's PCG64 stream, not torch's, so
the same seed does not give the same tokens in both engines.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from mcp.engine.params import SampledToken, SamplingParams

_FLOAT_MAX = np.finfo(np.float32).max
_TOP_P_HEAD = 1024  # candidates tried before a full sort in top-p, as the torch sampler


class Sampler:
    """Picks tokens for one sequence with its own seeded generator."""

    def __init__(self, params: SamplingParams) -> None:
        self.params = params
        # numpy seeds are non-negative: a negative seed maps to its 64-bit two's complement
        self.generator = np.random.default_rng(None if params.seed is None else params.seed % 2**64)

    def sample(self, logits: np.ndarray, prompt_ids: Sequence[int], generated_ids: Sequence[int]) -> SampledToken:
        """Choose the next token from one position's float32 ``logits`` [vocab]."""
        if logits.ndim != 1:
            raise ValueError(f"logits must be one position's [vocab] vector, got shape {logits.shape}")
        processed = apply_penalties(logits, prompt_ids, generated_ids, self.params)
        if self.params.temperature == 0.0:
            token_id = int(processed.argmax())
        else:
            candidates, ids = filter_logits(processed, self.params)
            token_id = int(ids[self._draw(candidates)])
        return self._result(logits, token_id)

    def _draw(self, logits: np.ndarray) -> int:
        """Index drawn from softmax(``logits``) (shifted so their max is 0) with one uniform number."""
        cdf = np.cumsum(np.exp(logits.astype(np.float64)))
        u = self.generator.random()
        index = int(np.searchsorted(cdf, u * cdf[-1], side="right"))
        return min(index, int(cdf.argmax()))  # rounding can never pick a zero-probability tail

    def _result(self, raw_logits: np.ndarray, token_id: int) -> SampledToken:
        num_top = self.params.logprobs
        if num_top is None:
            return SampledToken(token_id, None, ())
        shifted = raw_logits - raw_logits.max()
        logprobs = shifted - np.float32(math.log(np.exp(shifted.astype(np.float64)).sum()))
        top: tuple[tuple[int, float], ...] = ()
        if num_top > 0:
            ids = _largest(logprobs, min(num_top, logprobs.size))
            top = tuple((int(i), float(logprobs[i])) for i in ids)
        return SampledToken(token_id, float(logprobs[token_id]), top)


def apply_penalties(logits: np.ndarray, prompt_ids: Sequence[int], generated_ids: Sequence[int],
                    params: SamplingParams) -> np.ndarray:
    """Repetition, presence and frequency penalties, after ``logit_bias``; returns a new array."""
    logits = logits.astype(np.float32, copy=True)
    for token_id, bias in params.logit_bias:  # as mcp.engine.sampler
        if token_id < logits.size:
            logits[token_id] += np.float32(bias)
    if params.repetition_penalty != 1.0 and len(prompt_ids) + len(generated_ids):
        seen = np.unique(np.asarray([*prompt_ids, *generated_ids], dtype=np.int64))
        values = logits[seen]
        penalty = np.float32(params.repetition_penalty)
        with np.errstate(divide="ignore", over="ignore"):  # a tiny penalty: see mcp.engine.sampler
            penalized = np.where(values > 0, values / penalty, values * penalty)
        logits[seen] = np.clip(penalized, -_FLOAT_MAX, _FLOAT_MAX)
    if (params.presence_penalty or params.frequency_penalty) and len(generated_ids):
        unique, counts = np.unique(np.asarray(generated_ids, dtype=np.int64), return_counts=True)
        logits[unique] -= np.float32(params.presence_penalty) + np.float32(params.frequency_penalty) * counts.astype(
            np.float32)
    return logits


def filter_logits(logits: np.ndarray, params: SamplingParams) -> tuple[np.ndarray, np.ndarray]:
    """Temperature, top-k, top-p and min-p on penalized logits: (scaled logits, their ids)."""
    logits = (logits - logits.max()) / np.float32(params.temperature)
    ids = np.arange(logits.size)
    if 0 < params.top_k < logits.size:
        order = _largest(logits, params.top_k)
        logits, ids = logits[order], ids[order]
    if params.top_p < 1.0:
        logits, ids = _top_p(logits, ids, params.top_p)
    if params.min_p > 0.0:
        keep = logits >= logits.max() + np.float32(math.log(params.min_p))
        logits, ids = logits[keep], ids[keep]
    return logits, ids


def _largest(values: np.ndarray, count: int) -> np.ndarray:
    """Indices of the ``count`` largest values, largest first."""
    if count >= values.size:
        return np.argsort(-values, kind="stable")
    part = np.argpartition(-values, count - 1)[:count]
    return part[np.argsort(-values[part], kind="stable")]


def _top_p(logits: np.ndarray, ids: np.ndarray, top_p: float) -> tuple[np.ndarray, np.ndarray]:
    """The smallest most-probable prefix whose probability reaches ``top_p``, sorted."""
    wide = logits.astype(np.float64)
    peak = wide.max()
    log_total = peak + math.log(np.exp(wide - peak).sum())
    order = _largest(logits, min(logits.size, _TOP_P_HEAD))
    if order.size < logits.size and np.exp(wide[order] - log_total).sum() < top_p:
        order = _largest(logits, logits.size)
    probs = np.exp(wide[order] - log_total)
    before = np.cumsum(probs) - probs  # mass of the more probable tokens
    num_keep = max(1, int((before < top_p).sum()))
    return logits[order[:num_keep]], ids[order[:num_keep]]

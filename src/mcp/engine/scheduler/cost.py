"""A step-time model calibrated on measured steps, for admission control.

One engine step costs about ``base + per_token * tokens + per_sequence * sequences``: a
fixed overhead (reading the weights once), the prefill and decode tokens it computes, and
the sequences whose attention it runs. The coefficients are fitted online by exponentially
weighted least squares over the recent steps, starting from a prior, so the model follows
the machine it runs on and its load.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class StepCost:
    base_s: float
    per_token_s: float
    per_sequence_s: float

    def step_seconds(self, num_tokens: int, num_sequences: int) -> float:
        return self.base_s + self.per_token_s * num_tokens + self.per_sequence_s * num_sequences


# Measured for SmolLM2-135M on 2 CPU cores: a decode step ~25 ms, prefill ~2.5 ms a token.
DEFAULT_PRIOR = StepCost(base_s=0.025, per_token_s=0.0025, per_sequence_s=0.002)


class StepCostModel:
    """Weighted least squares over (1, tokens, sequences) -> seconds, forgetting old steps."""

    def __init__(self, prior: StepCost = DEFAULT_PRIOR, forgetting: float = 0.98, prior_weight: float = 5.0) -> None:
        if not 0 < forgetting <= 1:
            raise ValueError(f"forgetting must be in (0, 1], got {forgetting}")
        self._forgetting = forgetting
        self._prior = np.array([prior.base_s, prior.per_token_s, prior.per_sequence_s])
        # Normal equations (A, b) of the weighted fit, seeded with the prior as pseudo-steps.
        self._scale = np.array([1.0, 100.0, 10.0])  # typical feature sizes, for conditioning
        self._a = np.eye(3) * prior_weight
        self._b = self._a @ (self._prior * self._scale)
        self.num_observed = 0

    def observe(self, num_tokens: int, num_sequences: int, seconds: float) -> None:
        if num_tokens <= 0 or seconds < 0:
            return
        x = np.array([1.0, num_tokens, num_sequences]) / self._scale
        self._a = self._forgetting * self._a + np.outer(x, x)
        self._b = self._forgetting * self._b + x * seconds
        self.num_observed += 1

    def current(self) -> StepCost:
        base, per_token, per_sequence = np.maximum(np.linalg.solve(self._a, self._b), 0.0) / self._scale
        return StepCost(float(base), float(per_token), float(per_sequence))

"""Resolving a precision plan: which compute dtype each tensor gets at load.

The plan is data (``PrecisionPlan`` in the ``.mcp`` header, overridable from config); this
module is the pure function from (plan, tensor name, forced precision) to a dtype.
"""

from __future__ import annotations

import fnmatch
from collections import Counter
from dataclasses import dataclass

import torch

from mcp.modelfile.spec import PRECISIONS, PrecisionPlan
from mcp.runtime.errors import ConfigError

TORCH_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def precision_for(plan: PrecisionPlan, name: str) -> str:
    """The first override whose fnmatch pattern matches ``name``, else the plan's default."""
    for pattern, precision in plan.overrides:
        if fnmatch.fnmatchcase(name, pattern):
            return precision
    return plan.default


def override_plan(plan: PrecisionPlan, forced: str | None) -> PrecisionPlan:
    """The plan with every tensor forced to ``forced`` (None or "auto" keeps it)."""
    if forced in (None, "auto"):
        return plan
    if forced not in PRECISIONS:
        raise ConfigError(f"precision must be auto or one of {', '.join(PRECISIONS)}, got {forced!r}")
    return PrecisionPlan(default=forced)


@dataclass(frozen=True)
class ResolvedPlan:
    """The compute precision chosen for every tensor of a loaded model."""

    by_tensor: dict[str, str]

    @property
    def compute_precision(self) -> str:
        """Precision of activations: that of the most tensors."""
        return Counter(self.by_tensor.values()).most_common(1)[0][0]

    def summary(self) -> str:
        counts = Counter(self.by_tensor.values())
        if len(counts) == 1:
            return next(iter(counts))
        return ", ".join(f"{p}×{n}" for p, n in counts.most_common())

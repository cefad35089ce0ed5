"""One step under construction: its chunks, its token budget, and its pacing.

Continuous batching makes every sequence in a step wait for the whole step, so a running
``critical`` request decodes only as fast as the slowest batch it shares. Pacing bounds that:
each chunk already in the step sets an *allowance*, the seconds its request can spare before
its next token is due (its TTFT while it prefills, one TPOT per token after), and work of a
strictly lower class joins only while the step-cost model predicts the step still ends within
the allowances of every higher class in it. Lower-class decodes that do not fit skip the step
(they keep their KV blocks and run again when there is room); a lower-class prefill chunk is
cut to what fits. Requests of one class never hold each other back. A request that has fallen
behind still allows ``min_allowance`` of a TPOT, so a slow machine degrades to small steps
rather than none. Aging promotes skipped requests like waiting ones, so none is starved.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from mcp.engine.scheduler.cost import StepCost


@dataclass(frozen=True)
class PacingConfig:
    enabled: bool = True
    margin: float = 0.25  # of a TPOT kept back from each allowance, for the stream's own latency
    min_allowance: float = 0.5  # of a TPOT, the least a request behind its schedule still allows

    def __post_init__(self) -> None:
        if not (0 <= self.margin < 1 and 0 < self.min_allowance <= 1):
            raise ValueError(f"pacing needs 0 <= margin < 1 and 0 < min_allowance <= 1, got {self}")


@dataclass
class StepBuilder:
    """Chunks chosen so far for the next step, the token budget left, and the allowances."""

    budget: int  # tokens left under max_num_batched_tokens
    cost: StepCost
    pacing: PacingConfig
    chunks: dict = field(default_factory=dict)  # request id -> ScheduledChunk
    preempted: list = field(default_factory=list)
    waiting_blocked: bool = False  # the best waiting request found no room: none behind it may jump it
    num_tokens: int = 0
    _allowances: dict[str, tuple[int, float]] = field(default_factory=dict)  # id -> (effective class, seconds)

    def limit_s(self, effective_class: int) -> float:
        """The longest this step may take if a chunk of ``effective_class`` joins it."""
        if not self.pacing.enabled:
            return math.inf
        return min((s for c, s in self._allowances.values() if c < effective_class), default=math.inf)

    def tokens_that_fit(self, effective_class: int) -> int:
        """Tokens a new chunk of ``effective_class`` may have: the budget, cut by pacing."""
        limit = self.limit_s(effective_class)
        if math.isinf(limit):
            return self.budget
        spare = limit - self.cost.step_seconds(self.num_tokens, len(self.chunks) + 1)
        per_token = max(self.cost.per_token_s, 1e-6)
        return max(0, min(self.budget, int(spare // per_token)))

    def add(self, chunk, effective_class: int, allowance_s: float) -> None:
        self.chunks[chunk.request.request_id] = chunk
        self.budget -= chunk.num_tokens
        self.num_tokens += chunk.num_tokens
        self._allowances[chunk.request.request_id] = (effective_class, allowance_s)

    def drop(self, request_id: str) -> int:
        """Take a preempted request's chunk out again; returns the tokens it had."""
        chunk = self.chunks.pop(request_id, None)
        self._allowances.pop(request_id, None)
        if chunk is None:
            return 0
        self.budget += chunk.num_tokens
        self.num_tokens -= chunk.num_tokens
        return chunk.num_tokens

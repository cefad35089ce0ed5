"""The order in which requests get the engine: SLO class with aging, tenant fair share, slack.

``SLOPolicy`` ranks a request by
1. its class, promoted one class for every ``aging_s`` seconds it has waited since arrival
   (so a low request is never starved for ever: after 3 x aging_s it competes as critical);
2. its tenant's virtual token count (tokens served, divided by the tenant's weight): within a
   class the tenant that has had less goes first, so one tenant's flood cannot starve another;
3. its slack: how soon its next token is due (its TTFT or TPOT target, or its deadline);
4. arrival.
``FCFSPolicy`` ranks by arrival alone: the baseline a plain engine gives.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from mcp.engine.scheduler.request import Request
from mcp.engine.scheduler.slo import DEFAULT_TARGETS, SLOClass, SLOTarget
from mcp.engine.scheduler.step import PacingConfig


class FairShare:
    """Weighted virtual token counters per tenant (start-time fair queuing, by tokens)."""

    def __init__(self, weights: Mapping[str, float] | None = None) -> None:
        self._weights = dict(weights or {})
        for tenant, weight in self._weights.items():
            if weight <= 0:
                raise ValueError(f"tenant {tenant!r}: weight must be positive, got {weight}")
        self._virtual: dict[str, float] = {}

    def virtual_tokens(self, tenant: str) -> float:
        """A tenant seen for the first time starts level with the least-served one, not at 0."""
        if tenant not in self._virtual:
            self._virtual[tenant] = min(self._virtual.values(), default=0.0)
        return self._virtual[tenant]

    def charge(self, tenant: str, num_tokens: int) -> None:
        self._virtual[tenant] = self.virtual_tokens(tenant) + num_tokens / self._weights.get(tenant, 1.0)


class SLOPolicy:
    name = "slo"
    preempts_for_priority = True  # a waiting request may displace a running one of a lower class
    paces_steps = True  # lower classes may not stretch a step past a higher class's TPOT (step.py)

    def __init__(self, targets: Mapping[SLOClass, SLOTarget] = DEFAULT_TARGETS, aging_s: float = 10.0,
                 fair_share: FairShare | None = None) -> None:
        if aging_s <= 0:
            raise ValueError(f"aging_s must be positive, got {aging_s}")
        self.targets = {**DEFAULT_TARGETS, **targets}
        self.aging_s = aging_s
        self.fair_share = fair_share or FairShare()

    def effective_class(self, request: Request, now: float) -> int:
        promoted = int(max(0.0, now - request.arrival_s) // self.aging_s)
        return max(int(SLOClass.CRITICAL), int(request.slo_class) - promoted)

    def key(self, request: Request, now: float) -> tuple:
        """Smaller is served first."""
        slack = request.next_deadline(self.targets[request.slo_class]) - now
        return (self.effective_class(request, now), self.fair_share.virtual_tokens(request.tenant),
                slack, request.arrival_s)

    def allowance(self, request: Request, now: float, pacing: PacingConfig) -> float:
        """Seconds the step may take before ``request``'s next token is late, less a margin;
        at least ``pacing.min_allowance`` of its TPOT even when it is already late."""
        target = self.targets[request.slo_class]
        slack = request.next_deadline(target) - now
        return max(slack - pacing.margin * target.tpot_s, pacing.min_allowance * target.tpot_s)

    def outranks(self, waiting: Request, running: Request, now: float) -> bool:
        """May ``waiting`` preempt ``running``? Only across classes, never within one."""
        return self.effective_class(waiting, now) < self.effective_class(running, now)


class FCFSPolicy:
    name = "fcfs"
    preempts_for_priority = False
    paces_steps = False

    def __init__(self, targets: Mapping[SLOClass, SLOTarget] = DEFAULT_TARGETS) -> None:
        self.targets = {**DEFAULT_TARGETS, **targets}
        self.fair_share = FairShare()

    def key(self, request: Request, now: float) -> tuple:
        return (request.arrival_s,)

    def effective_class(self, request: Request, now: float) -> int:
        return 0  # one class: nothing is paced or preempted for another

    def allowance(self, request: Request, now: float, pacing: PacingConfig) -> float:
        return math.inf

    def outranks(self, waiting: Request, running: Request, now: float) -> bool:
        return False

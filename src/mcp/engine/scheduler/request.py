"""A request as the scheduler tracks it: tokens, progress through prefill and decode, timing."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from mcp.engine.scheduler.slo import SLOClass, SLOTarget


class RequestStatus(enum.Enum):
    WAITING = "waiting"  # queued, or preempted and queued again
    RUNNING = "running"  # holds KV blocks and a batch slot
    FINISHED = "finished"


@dataclass(eq=False)
class Request:
    """One generation request. ``output_ids`` survive preemption; the KV does not."""

    request_id: str
    prompt_ids: list[int]
    max_tokens: int
    slo_class: SLOClass = SLOClass.MEDIUM
    tenant: str = "default"
    arrival_s: float = 0.0
    deadline_s: float | None = None  # absolute; the request is dropped when it passes
    output_ids: list[int] = field(default_factory=list)
    num_computed_tokens: int = 0  # tokens whose KV is in the cache
    status: RequestStatus = RequestStatus.WAITING
    finish_reason: str | None = None
    first_token_s: float | None = None
    last_token_s: float | None = None
    num_preemptions: int = 0

    @property
    def num_tokens(self) -> int:
        return len(self.prompt_ids) + len(self.output_ids)

    @property
    def token_ids(self) -> list[int]:
        return self.prompt_ids + self.output_ids

    @property
    def num_pending_tokens(self) -> int:
        """Tokens the model must still compute before it can sample the next one."""
        return self.num_tokens - self.num_computed_tokens

    @property
    def is_prefilling(self) -> bool:
        return self.num_pending_tokens > 1 or not self.output_ids and self.num_pending_tokens > 0

    def next_deadline(self, target: SLOTarget) -> float:
        """When its next token is due: the TTFT target before the first, then one TPOT per token."""
        if self.first_token_s is None:
            due = self.arrival_s + target.ttft_s
        else:
            due = self.first_token_s + target.tpot_s * len(self.output_ids)
        return due if self.deadline_s is None else min(due, self.deadline_s)

"""A request while the engine loop holds it, and the loop's counters.

``LiveRequest`` binds the scheduler's ``Request`` (tokens, progress, timing) to the
``SequenceState`` that samples for it and the ``RequestHandle`` its submitter reads. Both
survive preemption: only the KV is recomputed.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp.engine.handle import RequestHandle, RequestOutcome
from mcp.engine.hooks import GenerationCompleted, RequestTimings, SequenceStarted, TokenGenerated
from mcp.engine.kv.manager import KVCacheManager
from mcp.engine.scheduler.request import Request
from mcp.engine.scheduler.scheduler import Scheduler
from mcp.engine.sequence import SequenceState, StepOutput


@dataclass(eq=False)
class LiveRequest:
    request: Request
    sequence: SequenceState
    handle: RequestHandle
    num_cached_tokens: int | None = None  # prompt tokens the prefix cache gave on its first schedule
    scheduled_s: float | None = None  # when that first schedule was: the request left the queue

    @property
    def slo_class(self) -> str:
        return self.request.slo_class.name.lower()

    def started_event(self) -> SequenceStarted:
        r = self.request
        return SequenceStarted(r.request_id, r.tenant, self.slo_class, len(r.prompt_ids), r.arrival_s)

    def token_event(self, step: StepOutput, now: float) -> TokenGenerated:
        r = self.request
        return TokenGenerated(r.request_id, r.tenant, self.slo_class, len(self.sequence.generated_ids) - 1,
                              step.token_id, step.text, now)

    def outcome(self, reason: str, now: float, tail_text: str, error: Exception | None) -> RequestOutcome:
        r = self.request
        timings = RequestTimings(r.arrival_s, r.first_token_s, now, self.scheduled_s)
        return RequestOutcome(r.request_id, reason, len(r.prompt_ids), len(self.sequence.generated_ids),
                              self.num_cached_tokens or 0, r.num_preemptions, timings, tail_text, error)

    def completed_event(self, outcome: RequestOutcome) -> GenerationCompleted:
        r = self.request
        return GenerationCompleted(
            r.request_id, r.tenant, self.slo_class, outcome.finish_reason, outcome.num_prompt_tokens,
            outcome.num_output_tokens, outcome.num_cached_tokens, outcome.num_preemptions, outcome.timings,
            None if outcome.error is None else str(outcome.error))


def chunk_token_ids(request: Request, start: int, stop: int) -> list[int]:
    """The request's tokens at positions start..stop-1 (prompt, then generated)."""
    num_prompt = len(request.prompt_ids)
    if start >= num_prompt:
        return request.output_ids[start - num_prompt:stop - num_prompt]
    return request.prompt_ids[start:stop] + request.output_ids[:max(0, stop - num_prompt)]


@dataclass(frozen=True)
class LoopStats:
    """Counters since the loop started, and the queues and KV cache now."""

    num_steps: int = 0
    max_sequences_in_step: int = 0  # the most sequences one step ran: > 1 means requests batched
    num_preemptions: int = 0
    num_finished: int = 0  # requests ended, for any reason
    num_running: int = 0
    num_waiting: int = 0
    num_blocks: int = 0
    num_free_blocks: int = 0  # free plus evictable (cached but unreferenced)
    num_cached_blocks: int = 0
    prefix_query_tokens: int = 0  # prompt tokens looked up in the prefix cache
    prefix_hit_tokens: int = 0  # of them, found cached


class StatsRecorder:
    """The mutable side of ``LoopStats``; the loop updates it under its lock."""

    def __init__(self) -> None:
        self.num_steps = self.max_sequences_in_step = self.num_preemptions = self.num_finished = 0

    def record_step(self, num_sequences: int, num_preempted: int) -> None:
        self.num_steps += num_sequences > 0
        self.max_sequences_in_step = max(self.max_sequences_in_step, num_sequences)
        self.num_preemptions += num_preempted

    def record_end(self) -> None:
        self.num_finished += 1

    def snapshot(self, scheduler: Scheduler, kv: KVCacheManager) -> LoopStats:
        return LoopStats(self.num_steps, self.max_sequences_in_step, self.num_preemptions, self.num_finished,
                         len(scheduler.running), len(scheduler.waiting), kv.num_blocks, kv.num_free_blocks,
                         kv.num_cached_blocks, kv.prefix_queries_tokens, kv.prefix_hit_tokens)

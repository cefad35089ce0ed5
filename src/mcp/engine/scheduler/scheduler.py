"""The continuous-batching scheduler: one ``schedule()`` per engine step.

Every step it hands the engine a token budget's worth of work: one token for each decoding
sequence and chunks of the prompts being prefilled, in the policy's order (``policy.py``).
Requests join and leave between steps. When KV blocks or batch slots run out, the request
the policy ranks last is preempted: its blocks are freed, its generated tokens kept, and it
is queued again to recompute. Under ``SLOPolicy`` a waiting request of a higher class also
preempts a running one of a lower class (vLLM's scheduler cannot: vllm-project/vllm#40004).
``add`` refuses a request at once (``CapacityError`` with a retry hint) when the cost model
predicts it would miss its TTFT target and the queue is past its bound.

The engine loop calls ``schedule()``, runs the forward, then ``update(output, sampled)``
with the token sampled for each chunk that ends a sequence's pending tokens (``update``
also trims each sequence to its sinks and window when the KV manager has a window), and
``finish(request_id, reason)`` when its own stop rules end a sequence. Nothing here runs a
model, so the tests drive it with hand-built outputs.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field

from mcp.base.errors import CapacityError, InvalidRequestError
from mcp.engine.kv.manager import KVCacheManager
from mcp.engine.scheduler.cost import StepCostModel
from mcp.engine.scheduler.policy import FCFSPolicy, SLOPolicy
from mcp.engine.scheduler.request import Request, RequestStatus
from mcp.engine.scheduler.step import PacingConfig, StepBuilder


@dataclass(frozen=True)
class SchedulerConfig:
    max_num_seqs: int = 32  # sequences in one step
    max_num_batched_tokens: int = 256  # tokens in one step: decode tokens plus prefill chunks
    max_waiting: int = 64  # past this queue length, requests predicted to miss their TTFT are refused

    def __post_init__(self) -> None:
        for name in ("max_num_seqs", "max_num_batched_tokens", "max_waiting"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")


@dataclass(frozen=True)
class ScheduledChunk:
    request: Request
    start: int  # position of the chunk's first token
    num_tokens: int

    @property
    def samples(self) -> bool:
        """True when the chunk ends the request's pending tokens: a token is sampled after it."""
        return self.start + self.num_tokens == self.request.num_tokens


@dataclass(frozen=True)
class SchedulerOutput:
    chunks: list[ScheduledChunk]
    preempted: list[Request] = field(default_factory=list)  # back in the queue, outputs kept
    expired: list[Request] = field(default_factory=list)  # finished by their deadline before this step

    @property
    def num_batched_tokens(self) -> int:
        return sum(chunk.num_tokens for chunk in self.chunks)


class Scheduler:
    def __init__(self, kv: KVCacheManager, policy: SLOPolicy | FCFSPolicy | None = None,
                 config: SchedulerConfig = SchedulerConfig(), cost: StepCostModel | None = None,
                 pacing: PacingConfig | None = None) -> None:
        self.kv = kv
        self.policy = policy or SLOPolicy()
        self.config = config
        self.cost = cost or StepCostModel()
        self.pacing = pacing or PacingConfig(enabled=self.policy.paces_steps)
        self.waiting: list[Request] = []
        self.running: list[Request] = []
        self._requests: dict[str, Request] = {}

    # -- joining and leaving ------------------------------------------------------------
    def add(self, request: Request, now: float) -> None:
        """Queue a request, or refuse it now with ``CapacityError`` (see the module doc)."""
        if request.request_id in self._requests:
            raise InvalidRequestError(f"request id {request.request_id!r} is already scheduled")
        if not request.prompt_ids or request.max_tokens <= 0:
            raise InvalidRequestError("a request needs at least one prompt token and max_tokens >= 1")
        num_tokens = len(request.prompt_ids) + request.max_tokens
        if not self.kv.can_hold(num_tokens, self.config.max_num_batched_tokens):
            raise CapacityError(f"request {request.request_id!r} needs more KV blocks than the cache holds; "
                                "shorten the prompt or lower max_tokens")
        self._admit_or_refuse(request, now)
        request.status = RequestStatus.WAITING
        self.waiting.append(request)
        self._requests[request.request_id] = request

    def finish(self, request_id: str, reason: str) -> Request:
        """End a request (stop, length, cancelled, error, deadline): its blocks are freed now."""
        request = self._requests.pop(request_id, None)
        if request is None:
            raise InvalidRequestError(f"request id {request_id!r} is not scheduled")
        if request.status is RequestStatus.RUNNING:
            self.running.remove(request)
            self.kv.free(request_id)
        else:
            self.waiting.remove(request)
        request.status, request.finish_reason = RequestStatus.FINISHED, reason
        return request

    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    # -- one step -------------------------------------------------------------------------
    def schedule(self, now: float) -> SchedulerOutput:
        """The work of the next step, and the requests preempted to make room for it.

        Running and waiting requests are visited in one rank order, so a waiting request of a
        higher class gets the budget before a running one of a lower class; pacing
        (``step.py``) keeps lower classes from stretching the step past a higher class's TPOT.
        """
        expired = self._drop_expired(now)
        step = StepBuilder(self.config.max_num_batched_tokens, self.cost.current(), self.pacing)
        for request in self._in_rank_order(now):
            if step.budget == 0:
                break
            if request.status is RequestStatus.RUNNING:
                self._schedule_running(request, now, step)
            elif not step.waiting_blocked and request not in step.preempted:
                self._schedule_waiting(request, now, step)
        return SchedulerOutput(list(step.chunks.values()), step.preempted, expired)

    def _in_rank_order(self, now: float) -> list[Request]:
        keys = {r.request_id: self.policy.key(r, now) for r in self.running + self.waiting}
        rank = lambda r: keys[r.request_id]  # noqa: E731
        self.running.sort(key=rank)
        self.waiting.sort(key=rank)
        return list(heapq.merge(self.running, self.waiting, key=rank))

    def _schedule_running(self, request: Request, now: float, step: StepBuilder) -> None:
        if request.status is not RequestStatus.RUNNING:  # preempted earlier in this step
            return
        effective_class = self.policy.effective_class(request, now)
        size = min(request.num_pending_tokens, step.tokens_that_fit(effective_class))
        if size == 0:
            return  # paced out: it keeps its blocks and runs in a later step
        while not self.kv.allocate(request.request_id, request.num_computed_tokens + size):
            victim = self._worst_running(now)
            self._preempt(victim, step)
            if victim is request:
                return
        chunk = ScheduledChunk(request, request.num_computed_tokens, size)
        step.add(chunk, effective_class, self.policy.allowance(request, now, self.pacing))

    def _schedule_waiting(self, request: Request, now: float, step: StepBuilder) -> None:
        effective_class = self.policy.effective_class(request, now)
        if step.tokens_that_fit(effective_class) == 0:
            return  # paced out of this step; requests behind it rank no higher
        if not self._make_room(request, now, step):
            step.waiting_blocked = True
            return
        cached = self.kv.start(request.request_id, request.token_ids)
        request.num_computed_tokens = cached
        size = min(request.num_pending_tokens, step.tokens_that_fit(effective_class))
        if size == 0 or not self.kv.allocate(request.request_id, cached + size):
            self.kv.free(request.request_id)
            request.num_computed_tokens = 0
            step.waiting_blocked = True
            return
        self.waiting.remove(request)
        self.running.append(request)
        request.status = RequestStatus.RUNNING
        step.add(ScheduledChunk(request, cached, size), effective_class,
                 self.policy.allowance(request, now, self.pacing))

    def _make_room(self, request: Request, now: float, step: StepBuilder) -> bool:
        """Free a batch slot and the blocks for ``request``'s first chunk, preempting lower
        classes if the policy allows."""
        first_chunk = min(request.num_tokens, self.config.max_num_batched_tokens)
        while True:
            if len(self.running) < self.config.max_num_seqs and self.kv.can_allocate(request.request_id, first_chunk):
                return True
            victim = self._worst_running(now) if self.running else None
            if victim is None or not self.policy.outranks(request, victim, now):
                return False
            self._preempt(victim, step)

    def _worst_running(self, now: float) -> Request:
        return max(self.running, key=lambda r: self.policy.key(r, now))

    def _preempt(self, victim: Request, step: StepBuilder) -> None:
        """Send a running request back to the queue, taking its chunk out of the step."""
        self.running.remove(victim)
        self.kv.free(victim.request_id)
        victim.status, victim.num_computed_tokens = RequestStatus.WAITING, 0
        victim.num_preemptions += 1
        self.waiting.append(victim)
        step.preempted.append(victim)
        step.drop(victim.request_id)

    def update(self, output: SchedulerOutput, sampled: Mapping[str, int], now: float,
               step_seconds: float | None = None) -> list[Request]:
        """Record a finished step: KV computed, tokens sampled; returns requests that hit max_tokens."""
        if step_seconds is not None:
            self.cost.observe(output.num_batched_tokens, len(output.chunks), step_seconds)
        finished = []
        for chunk in output.chunks:
            request = chunk.request
            if request.status is not RequestStatus.RUNNING:
                continue  # finished or cancelled while the step ran
            request.num_computed_tokens = chunk.start + chunk.num_tokens
            self.kv.commit(request.request_id, request.token_ids[: request.num_computed_tokens])
            if self.kv.trims:  # free what fell between the sinks and the window
                self.kv.trim(request.request_id, request.num_computed_tokens)
            self.policy.fair_share.charge(request.tenant, chunk.num_tokens)
            if not chunk.samples:
                continue
            request.output_ids.append(sampled[request.request_id])
            if request.first_token_s is None:
                request.first_token_s = now
            request.last_token_s = now
            if len(request.output_ids) >= request.max_tokens:
                finished.append(self.finish(request.request_id, "length"))
        return finished

    # -- admission ------------------------------------------------------------------------
    def predicted_ttft(self, request: Request, now: float) -> float:
        """Seconds until ``request``'s first token if it joined now, from the step-cost model."""
        key = self.policy.key(request, now)
        ahead = [r for r in self.waiting if self.policy.key(r, now) <= key]
        tokens = request.num_tokens + sum(r.num_pending_tokens for r in ahead)
        budget = self.config.max_num_batched_tokens
        steps = -(-tokens // budget)
        decode_tokens = min(len(self.running), self.config.max_num_seqs)
        cost = self.cost.current()
        return steps * cost.step_seconds(min(tokens, budget) + decode_tokens, decode_tokens + 1)

    def predicted_tpot(self, request: Request, now: float) -> float:
        """Seconds a decode step would take with ``request`` and every request that pacing
        cannot hold back for it (those of its class or higher) decoding together."""
        effective_class = self.policy.effective_class(request, now)
        peers = sum(self.policy.effective_class(r, now) <= effective_class for r in self.running + self.waiting)
        num_decoding = min(peers + 1, self.config.max_num_seqs)
        return self.cost.current().step_seconds(num_decoding, num_decoding)

    def _admit_or_refuse(self, request: Request, now: float) -> None:
        if not isinstance(self.policy, SLOPolicy) or len(self.waiting) < self.config.max_waiting:
            return
        name, target = request.slo_class.name.lower(), self.policy.targets[request.slo_class]
        predicted = self.predicted_ttft(request, now)
        if predicted > target.ttft_s:
            raise CapacityError(
                f"the engine is saturated: {len(self.waiting)} requests wait and a {name} request would get its "
                f"first token in ~{predicted:.1f} s, past its {target.ttft_s:.1f} s target; retry later",
                retry_after_s=round(predicted - target.ttft_s, 3),
            )
        per_token = self.predicted_tpot(request, now)
        if per_token > target.tpot_s:
            raise CapacityError(
                f"the engine is saturated: {len(self.waiting)} requests wait and a {name} request would decode at "
                f"~{1000 * per_token:.0f} ms a token, past its {1000 * target.tpot_s:.0f} ms target; retry later",
                retry_after_s=round(self.predicted_ttft(request, now), 3),
            )

    def _drop_expired(self, now: float) -> list[Request]:
        late = [r for r in self.waiting + self.running if r.deadline_s is not None and now >= r.deadline_s]
        return [self.finish(request.request_id, "deadline") for request in late]

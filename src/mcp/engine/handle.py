"""What a submitter holds for one request in the engine loop: its outputs, as they come.

The loop pushes each generated token's ``StepOutput`` onto the request's own queue and, at
the end, one ``RequestOutcome``. ``RequestHandle`` iterates the StepOutputs (blocking on the
queue, or awaiting them from an asyncio event loop), raises the outcome's error if the
request failed, and can cancel the request.
"""

from __future__ import annotations

import asyncio
import math
import queue
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass

from mcp.base.errors import InvalidRequestError, MCPError
from mcp.engine.hooks import RequestTimings
from mcp.engine.scheduler.slo import SLOClass
from mcp.engine.sequence import StepOutput


@dataclass(frozen=True)
class RequestOptions:
    """How a request is scheduled: its SLO class, its tenant, and a timeout in seconds.

    ``slo_class`` may be given by name ("critical", "high", "medium", "low"); a timeout
    ends the request with finish_reason "deadline" that many seconds after submission.
    """

    slo_class: SLOClass = SLOClass.MEDIUM
    tenant: str = "default"
    timeout: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "slo_class", SLOClass.parse(self.slo_class))
        if not isinstance(self.tenant, str) or not self.tenant:
            raise InvalidRequestError(f"tenant must be a non-empty string, got {self.tenant!r}")
        timeout = self.timeout
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                    or not math.isfinite(timeout) or timeout <= 0):
            raise InvalidRequestError(f"timeout must be a positive number of seconds or None, got {timeout!r}")


@dataclass(frozen=True)
class RequestOutcome:
    """How a request ended."""

    request_id: str
    finish_reason: str  # stop | length | cancelled | deadline | error
    num_prompt_tokens: int
    num_output_tokens: int
    num_cached_tokens: int  # prompt tokens the prefix cache supplied on its first schedule
    num_preemptions: int
    timings: RequestTimings
    tail_text: str = ""  # text held back (a possible stop-string start) released at a cancel/deadline
    error: MCPError | None = None  # set when finish_reason is "error" or the loop closed under it


class RequestHandle(Iterator[StepOutput]):
    """One submitted request. Iterate it for its StepOutputs; ``cancel()`` ends it early.

    Safe to cancel from any thread; iterate it from one thread at a time.
    """

    def __init__(self, request_id: str, num_prompt_tokens: int, cancel: Callable[[str], None]) -> None:
        self.request_id = request_id
        self.num_prompt_tokens = num_prompt_tokens
        self.outputs: list[StepOutput] = []  # every StepOutput handed out so far
        self._queue: queue.SimpleQueue[StepOutput | RequestOutcome] = queue.SimpleQueue()
        self._cancel = cancel
        self._outcome: RequestOutcome | None = None
        self._wake: Callable[[], None] | None = None  # set while an asyncio reader awaits

    # -- the loop's side ------------------------------------------------------------------
    def _push(self, item: StepOutput | RequestOutcome) -> None:
        self._queue.put(item)
        wake = self._wake
        if wake is not None:
            wake()

    # -- the submitter's side -------------------------------------------------------------
    @property
    def outcome(self) -> RequestOutcome | None:
        """How the request ended, once the iteration has reached its end; None before."""
        return self._outcome

    @property
    def done(self) -> bool:
        return self._outcome is not None

    def __next__(self) -> StepOutput:
        if self._outcome is not None:
            return self._end()
        item = self._queue.get()
        if isinstance(item, RequestOutcome):
            self._outcome = item
            return self._end()
        self.outputs.append(item)
        return item

    async def aiter_steps(self) -> AsyncIterator[StepOutput]:
        """The StepOutputs, awaited on the running asyncio loop, as ``__next__`` gives them.

        No thread waits on the queue: the engine loop wakes this reader through the event
        loop (one ``call_soon_threadsafe`` per token), and each wake-up drains every output
        queued by then, so a server streaming many requests spends no thread hop per token.
        """
        loop = asyncio.get_running_loop()
        ready = asyncio.Event()

        def wake() -> None:  # runs on the engine loop's thread: must never raise there
            try:
                loop.call_soon_threadsafe(ready.set)
            except RuntimeError:
                pass  # the reader's event loop has closed; nobody is left to wake

        self._wake = wake
        try:
            while self._outcome is None:
                ready.clear()  # before draining: a push after the drain sets it again
                steps, _ = self.drain()
                for item in steps:
                    yield item
                if self._outcome is None:
                    await ready.wait()
        finally:
            self._wake = None
        if self._outcome.error is not None:
            raise self._outcome.error

    def watch(self, wake: Callable[[], None] | None) -> None:
        """Call ``wake()`` after each push (on the engine loop's thread: it must be quick and
        never raise); None stops it. For a reader that drains many handles (a worker's sender)."""
        self._wake = wake

    def drain(self) -> tuple[list[StepOutput], RequestOutcome | None]:
        """Everything queued now, without blocking: the new StepOutputs, and the outcome once
        the request has ended (None before)."""
        steps: list[StepOutput] = []
        while self._outcome is None:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, RequestOutcome):
                self._outcome = item
            else:
                self.outputs.append(item)
                steps.append(item)
        return steps, self._outcome

    def _end(self) -> StepOutput:
        assert self._outcome is not None
        if self._outcome.error is not None:
            raise self._outcome.error
        raise StopIteration

    def wait(self) -> RequestOutcome:
        """Read the request to its end; returns its outcome, or raises its error."""
        for _ in self:
            pass
        assert self._outcome is not None
        return self._outcome

    def cancel(self) -> None:
        """Stop the request: the loop ends it at its next step and frees its KV blocks.

        Idempotent; does nothing once the request has ended. Never blocks.
        """
        if self._outcome is None:
            self._cancel(self.request_id)

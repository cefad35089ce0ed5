"""``Reply``: the lifecycle of one ``ServingRequest``'s answer, the same for HTTP and gRPC.

``Reply.start`` takes a request through admission (``governed.start``: input policy, version
held, every choice submitted). The transport then reads the answer whole (``whole``) or as
events (``events``); either way each choice passes the output policy, and the transport calls
``settle`` to commit the audit record before its last byte goes out (``settle_failed`` when an
engine error ends it). ``finish`` runs exactly once however the request ends (answered, failed,
cancelled, the client gone): it records the request if nothing did, stops what still runs,
releases the version and counts the tokens against the tenant. Rendering (OpenAI JSON and
server-sent events, ``mcp.v1`` messages) stays in each transport's adapter.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from mcp.base.errors import MCPError
from mcp.base.result import InferResult
from mcp.engine.sequence import StepOutput
from mcp.serving import governed
from mcp.serving.errors import describe
from mcp.serving.generation import ChoiceEvent, Generation
from mcp.serving.host import ModelVersion
from mcp.serving.request import ServingRequest
from mcp.serving.tenants import Tenant

if TYPE_CHECKING:
    from mcp.governance.plane import Inference, InferenceOutcome
    from mcp.serving.state import ServerState


class Reply:
    """One request's answer on its held version: results per choice, the output policy on
    them, one audit record, one end."""

    def __init__(self, state: ServerState, tenant: Tenant, request: ServingRequest, version: ModelVersion,
                 generation: Generation, inference: Inference | None = None) -> None:
        self.state, self.tenant, self.request = state, tenant, request
        self.version, self.generation, self.inference = version, generation, inference
        self.guards = [inference.output_guard() for _ in generation.streams] if inference is not None else []
        self.results: dict[int, InferResult] = {}  # by choice index, as the client gets them
        self.finished = False
        tokenizer = version.model.engine.tokenizer
        self.decode: Callable[[int], str] | None = (
            (lambda token_id: tokenizer.decode([token_id])) if request.logprobs else None)

    @classmethod
    async def start(cls, state: ServerState, tenant: Tenant, request: ServingRequest) -> Reply:
        """Admit the request, hold its version and submit every choice (refusals raise here)."""
        version, generation, inference = await governed.start(state.host, state.governance, request)
        return cls(state, tenant, request, version, generation, inference)

    @property
    def num_choices(self) -> int:
        return len(self.generation.streams)

    async def whole(self) -> tuple[list[InferResult], list[list[StepOutput]]]:
        """Every choice read to its end, through the output policy, its record committed: the
        results and each choice's steps, in choice order. An engine error is recorded, then raised."""
        steps: list[list[StepOutput]] = [[] for _ in range(self.num_choices)]
        try:
            async for event in self.generation.events():
                if event.step is not None:
                    steps[event.index].append(event.step)
                if event.result is not None:
                    self.results[event.index] = event.result
        except MCPError as exc:  # e.g. its worker died: the record says so before the error answer goes out
            await self.settle_failed(exc)
            raise
        results = [self.results[i] for i in range(self.num_choices)]
        if self.guards:
            results = [governed.guard_whole(guard, r) for guard, r in zip(self.guards, results, strict=True)]
            self.results = dict(enumerate(results))
        await self.settle()
        return results, steps

    async def events(self) -> AsyncIterator[ChoiceEvent]:
        """Every choice's events as the output policy lets them through (a stopped choice ends
        with ``content_filter``, its sequence cancelled); each choice's result is kept."""
        async for event in self.generation.events():
            event = self._guarded(event)
            if event.result is not None:
                self.results[event.index] = event.result
            yield event

    async def settle(self) -> None:
        """Commit the audit record of the answer so far (call it before the last byte goes out)."""
        if self.inference is not None and self.results:
            await self.inference.finish(self._outcome())

    async def settle_failed(self, error: MCPError) -> None:
        """A request that failed after it started (its worker died): the record says why."""
        if self.inference is not None:
            await self.inference.finish(self._outcome(f"error:{describe(error).code or 'engine'}"))

    def finish(self) -> None:
        """Once, at the end however it came: record it if nothing did, stop what still runs, release
        the version, count tokens. Every admitted request leaves exactly one audit record."""
        if self.finished:
            return
        self.finished = True
        if self.inference is not None:  # ended before its record (the client left, the task was cancelled)
            self.inference.finish_soon(self._outcome("cancelled"))  # a no-op once recorded
        self.generation.cancel()
        self.state.host.release(self.version)
        used = sum(r.usage.total_tokens for r in self.results.values())
        self.state.limiter.record_tokens(self.tenant, used)

    def _guarded(self, event: ChoiceEvent) -> ChoiceEvent:
        if not self.guards:
            return event
        guard = self.guards[event.index]
        text, result = governed.guard_event_text(guard, event.text, event.result)
        if guard.stopped and event.result is None:
            self.generation.streams[event.index].cancel()
        return replace(event, text=text, result=result)

    def _outcome(self, status: str | None = None) -> InferenceOutcome:
        results = [self.results[i] for i in sorted(self.results)]
        return governed.outcome(results, self.guards, status, self.version.key)

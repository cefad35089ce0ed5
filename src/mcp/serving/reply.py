"""``Reply``: the life of one ``ServingRequest``, the same for HTTP and gRPC, from admission to its one end.

``Reply.start`` admits the request: the governance plane's input policy, when configured (a
deny is a ``PolicyDenied``: HTTP 403 in OpenAI's error format, gRPC PERMISSION_DENIED, raised
by the plane after the refusal is recorded; a rule may redact the prompts or reroute the
model), then the model version resolved and held and every choice submitted (admission
control may refuse). The transport then reads the answer whole (``whole``) or as events
(``events``); either way each choice passes the output policy (streamed text on a sliding
window), and the transport calls ``settle`` to commit the audit record before its last byte
goes out (``settle_failed`` when an engine error ends it). ``finish`` runs exactly once
however the request ends (answered, failed, cancelled, the client gone): it records the
request if nothing did, stops what still runs, releases the version and counts the tokens
against the tenant. ``redactions`` says what governance replaced, for the answer to report.
Rendering (OpenAI JSON and server-sent events, ``mcp.v1`` messages) stays in each transport's
adapter; nothing here knows HTTP or gRPC.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from mcp.base.errors import MCPError
from mcp.base.result import InferResult
from mcp.engine.sequence import StepOutput
from mcp.serving.errors import describe
from mcp.serving.generation import ChoiceEvent, Generation
from mcp.serving.host import ModelHost, ModelVersion
from mcp.serving.request import ServingRequest
from mcp.serving.tenants import Tenant

if TYPE_CHECKING:
    from mcp.governance.guard import OutputGuard
    from mcp.governance.plane import GovernancePlane, Inference, InferenceOutcome
    from mcp.governance.redactions import Redactions
    from mcp.serving.state import ServerState

CONTENT_FILTER = "content_filter"


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
        inference = None
        if state.governance is not None:
            inference, request = await admit(state.governance, request)
        version, generation = await _run(state.host, request, inference)
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
            results = [_guard_whole(guard, r) for guard, r in zip(self.guards, results, strict=True)]
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

    def redactions(self) -> Redactions | None:
        """The spans governance replaced so far, in the prompt and the answer (None without it)."""
        return self.inference.redactions() if self.inference is not None else None

    async def settle(self) -> None:
        """Commit the audit record of the answer so far (call it before the last byte goes out)."""
        if self.inference is not None and self.results:
            await self.inference.finish(self._recorded())

    async def settle_failed(self, error: MCPError) -> None:
        """A request that failed after it started (its worker died): the record says why."""
        if self.inference is not None:
            await self.inference.finish(self._recorded(f"error:{describe(error).code or 'engine'}"))

    def finish(self) -> None:
        """Once, at the end however it came: record it if nothing did, stop what still runs, release
        the version, count tokens. Every admitted request leaves exactly one audit record."""
        if self.finished:
            return
        self.finished = True
        if self.inference is not None:  # ended before its record (the client left, the task was cancelled)
            self.inference.finish_soon(self._recorded("cancelled"))  # a no-op once recorded
        self.generation.cancel()
        self.state.host.release(self.version)
        used = sum(r.usage.total_tokens for r in self.results.values())
        self.state.limiter.record_tokens(self.tenant, used)

    def _guarded(self, event: ChoiceEvent) -> ChoiceEvent:
        if not self.guards:
            return event
        guard = self.guards[event.index]
        text, result = _guard_event_text(guard, event.text, event.result)
        if guard.stopped and event.result is None:
            self.generation.streams[event.index].cancel()
        return replace(event, text=text, result=result)

    def _recorded(self, status: str | None = None) -> InferenceOutcome:
        results = [self.results[i] for i in sorted(self.results)]
        return _outcome(results, self.guards, status, self.version.key)


# -- admission, the output policy and the audit record -----------------------------------------
async def admit(plane: GovernancePlane, request: ServingRequest) -> tuple[Inference, ServingRequest]:
    """The admitted inference and the request to run: its prompts redacted where a rule said so,
    its model the one a reroute names."""
    from mcp.governance.plane import InferenceRequest

    texts = request.texts()
    inference = await plane.admit(InferenceRequest(
        request_id=request.request_id, route=request.route, operation=request.operation, tenant=request.tenant,
        model=request.model, prompt_texts=texts, max_tokens=request.max_tokens, user=request.user,
        carrier=dict(request.trace_context), attributes=dict(request.attributes), metadata=dict(request.metadata)))
    redacted = inference.prompt_texts
    admitted = request if redacted == texts else request.with_texts(redacted)
    return inference, replace(admitted, model=inference.model or request.model)


async def _run(host: ModelHost, request: ServingRequest, inference: Inference | None,
               ) -> tuple[ModelVersion, Generation]:
    """The admitted request's version resolved and held, every choice submitted. Whatever fails
    here is recorded, the version released."""
    try:
        version = host.resolve_and_hold(request.model)
    except BaseException as exc:
        await _record_failure(inference, exc)
        raise
    try:
        generation = await Generation.start(version, request)
    except BaseException as exc:
        host.release(version)
        await _record_failure(inference, exc)
        raise
    return version, generation


async def _record_failure(inference: Inference | None, exc: BaseException) -> None:
    """A request that was admitted but never ran (no model, refused by admission control): its
    record says why."""
    if inference is not None:
        await inference.finish(_outcome([], [], status=f"error:{describe(exc).code or type(exc).__name__}"))


def _guard_event_text(guard: OutputGuard, text: str, result: InferResult | None) -> tuple[str, InferResult | None]:
    """One streamed step through the guard: the text to send now, and the choice's result at its
    end (its text what was sent, ``content_filter`` if a rule stopped it)."""
    sent = guard.feed(text)
    if result is None:
        return sent, None
    sent += guard.flush()
    reason = CONTENT_FILTER if guard.stopped else result.finish_reason
    return sent, replace(result, text=guard.text, finish_reason=reason)


def _guard_whole(guard: OutputGuard, result: InferResult) -> InferResult:
    """A finished choice, checked: its text as the client may see it."""
    text = guard.feed(result.text) + guard.flush()
    return replace(result, text=text, finish_reason=CONTENT_FILTER if guard.stopped else result.finish_reason)


def _outcome(results: Sequence[InferResult], guards: Sequence[OutputGuard], status: str | None = None,
             model_key: str | None = None) -> InferenceOutcome:
    from mcp.governance.plane import InferenceOutcome

    first = results[0] if results else None
    if status is None:
        stopped, cancelled = any(g.stopped for g in guards), any(r.finish_reason == "cancelled" for r in results)
        status = "stopped" if stopped else "cancelled" if cancelled else "ok"
    return InferenceOutcome(
        status=status, model_key=model_key,
        outputs=tuple(g.text for g in guards) if guards else tuple(r.text for r in results),
        prompt_tokens=sum(r.usage.prompt_tokens for r in results),
        completion_tokens=sum(r.usage.completion_tokens for r in results),
        finish_reasons=tuple(r.finish_reason for r in results),
        ttft_s=first.timings.ttft_s if first else None, total_s=first.timings.total_s if first else None,
        queue_s=first.timings.queue_s if first else None)

"""The serving side of the governance plane, for HTTP and gRPC alike: prompts in, guarded answers out.

``start`` takes a ``ServingRequest`` of either API from admission to its running choices; ``admit``
runs the input policy before anything is scheduled (a deny is a ``PolicyDenied``:
HTTP 403 in OpenAI's error format, gRPC PERMISSION_DENIED, raised by the plane after the
refusal is recorded); ``guard_whole`` runs the output policy on a finished choice (a stream
feeds ``Inference.output_guard()`` itself); ``outcome`` says how the request ended, for the
audit record and the span. No HTTP here: the request carries its route and trace context.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from mcp.base.result import InferResult
from mcp.serving.generation import Generation
from mcp.serving.host import ModelHost, ModelVersion
from mcp.serving.request import ServingRequest

if TYPE_CHECKING:
    from mcp.governance.guard import OutputGuard
    from mcp.governance.plane import GovernancePlane, Inference, InferenceOutcome

CONTENT_FILTER = "content_filter"


async def admit(plane: GovernancePlane, request: ServingRequest) -> tuple[Inference, ServingRequest]:
    """The admitted inference and the request to run: its prompts redacted where a rule said so,
    its model the one a reroute names."""
    from mcp.governance.plane import InferenceRequest

    texts = request.texts()
    inference = await plane.admit(InferenceRequest(
        request_id=request.request_id, route=request.route, operation=request.operation, tenant=request.tenant,
        model=request.model, prompt_texts=texts, max_tokens=request.max_tokens, user=request.user,
        carrier=dict(request.trace_context), attributes=dict(request.attributes)))
    redacted = inference.prompt_texts
    admitted = request if redacted == texts else request.with_texts(redacted)
    return inference, replace(admitted, model=inference.model or request.model)


async def start(host: ModelHost, plane: GovernancePlane | None, request: ServingRequest,
                ) -> tuple[ModelVersion, Generation, Inference | None]:
    """A request of either API from admission to its running choices: the input policy (with a
    plane; it may redact the prompts or reroute the model), the version resolved and held,
    every choice submitted. Whatever fails after admission is recorded, the version released."""
    inference = None
    if plane is not None:
        inference, request = await admit(plane, request)
    try:
        version = host.resolve_and_hold(request.model)
    except BaseException as exc:
        await record_failure(inference, exc)
        raise
    try:
        generation = await Generation.start(version, request)
    except BaseException as exc:
        host.release(version)
        await record_failure(inference, exc)
        raise
    return version, generation, inference


async def record_failure(inference: Inference | None, exc: BaseException) -> None:
    """A request that was admitted but never ran (no model, refused by admission control): its
    record says why."""
    from mcp.serving.errors import describe

    if inference is not None:
        await inference.finish(outcome([], [], status=f"error:{describe(exc).code or type(exc).__name__}"))


def guard_event_text(guard: OutputGuard, text: str, result: InferResult | None) -> tuple[str, InferResult | None]:
    """One streamed step through the guard: the text to send now, and the choice's result at its
    end (its text what was sent, ``content_filter`` if a rule stopped it)."""
    sent = guard.feed(text)
    if result is None:
        return sent, None
    sent += guard.flush()
    reason = CONTENT_FILTER if guard.stopped else result.finish_reason
    return sent, replace(result, text=guard.text, finish_reason=reason)


def guard_whole(guard: OutputGuard, result: InferResult) -> InferResult:
    """A finished choice, checked: its text as the client may see it."""
    text = guard.feed(result.text) + guard.flush()
    return replace(result, text=text, finish_reason=CONTENT_FILTER if guard.stopped else result.finish_reason)


def outcome(results: Sequence[InferResult], guards: Sequence[OutputGuard], status: str | None = None,
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

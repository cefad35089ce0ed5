"""The serving side of the governance plane, for HTTP and gRPC alike: prompts in, guarded answers out.

``start`` takes a request of either API from admission to its running choices; ``admit``
runs the input policy before anything is scheduled (a deny is a ``PolicyDenied``:
HTTP 403 in OpenAI's error format, gRPC PERMISSION_DENIED, raised by the plane after the
refusal is recorded); ``guard_whole`` runs the output policy on a finished choice (a stream
feeds ``Inference.output_guard()`` itself); ``outcome`` says how the request ended, for the
audit record and the span. No HTTP here: callers pass the route and the trace headers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from mcp.base.result import InferResult
from mcp.serving.generation import Generation, Prompt
from mcp.serving.host import ModelHost, ModelVersion
from mcp.serving.tenants import Caller

if TYPE_CHECKING:
    from mcp.governance.guard import OutputGuard
    from mcp.governance.plane import GovernancePlane, Inference, InferenceOutcome

CONTENT_FILTER = "content_filter"


TRACE_HEADERS = ("traceparent", "tracestate")


async def admit(plane: GovernancePlane, route: str, headers: Mapping[str, str], caller: Caller, request_id: str,
                model: str | None, prompts: list[Prompt], max_tokens: int, user: str | None, chat: bool,
                attributes: dict) -> tuple[Inference, list[Prompt]]:
    """The admitted inference and the prompts to run (redacted where a rule said so). ``headers``
    are the HTTP headers or the gRPC metadata: the W3C trace context is taken from them."""
    from mcp.governance.plane import InferenceRequest

    texts = tuple(_texts(prompts))
    carrier = {k.lower(): v for k, v in headers.items() if k.lower() in TRACE_HEADERS}
    inference = await plane.admit(InferenceRequest(
        request_id=request_id, route=route,
        operation="chat" if chat else "text_completion", tenant=caller.tenant.name, model=model,
        prompt_texts=texts, max_tokens=max_tokens, user=user, carrier=carrier, attributes=attributes))
    redacted = inference.prompt_texts
    return inference, (prompts if redacted == texts else _with_texts(prompts, redacted))


async def start(host: ModelHost, plane: GovernancePlane | None, route: str, headers: Mapping[str, str],
                caller: Caller, request_id: str, model: str | None, prompts: list[Prompt], options: dict, n: int,
                user: str | None, chat: bool, attributes: dict,
                ) -> tuple[ModelVersion, Generation, Inference | None]:
    """A request of either API from admission to its running choices: the input policy (with a
    plane; it may redact the prompts or reroute the model), the version resolved and held,
    every choice submitted. Whatever fails after admission is recorded, the version released."""
    inference = None
    if plane is not None:
        inference, prompts = await admit(plane, route, headers, caller, request_id, model, prompts,
                                         options["max_tokens"], user, chat, attributes)
        model = inference.model or model
    try:
        version = host.resolve_and_hold(model)
    except BaseException as exc:
        await record_failure(inference, exc)
        raise
    try:
        generation = await Generation.start(version, prompts, options, n)
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


def _texts(prompts: list[Prompt]) -> list[str]:
    texts: list[str] = []
    for prompt in prompts:
        texts += [m["content"] for m in prompt.messages] if prompt.messages is not None else [prompt.text or ""]
    return texts


def _with_texts(prompts: list[Prompt], texts: tuple[str, ...]) -> list[Prompt]:
    remaining = iter(texts)
    rebuilt = []
    for prompt in prompts:
        if prompt.messages is not None:
            rebuilt.append(Prompt(messages=[{**m, "content": next(remaining)} for m in prompt.messages]))
        else:
            rebuilt.append(Prompt(text=next(remaining)))
    return rebuilt

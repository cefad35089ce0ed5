"""Engine results and steps as OpenAI wire objects (schemas.py): responses, chunks, logprobs."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mcp.base.result import InferResult
from mcp.engine.sequence import StepOutput
from mcp.serving.http import schemas as s

Decode = Callable[[int], str]


def usage(results: Sequence[InferResult], num_prompts: int = 1) -> s.Usage:
    """Prompt tokens counted once per prompt (not once per choice), completions summed."""
    per_prompt = len(results) // max(num_prompts, 1)
    prompt = sum(r.usage.prompt_tokens for r in results[::per_prompt]) if results else 0
    completion = sum(r.usage.completion_tokens for r in results)
    return s.Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)


def chat_logprobs(steps: Sequence[StepOutput], decode: Decode) -> s.ChoiceLogprobs:
    return s.ChoiceLogprobs(content=[
        s.TokenLogprob(token=decode(step.token_id), logprob=_finite(step.logprob),
                       bytes=list(decode(step.token_id).encode()),
                       top_logprobs=[s.TopLogprob(token=decode(t), logprob=_finite(lp), bytes=list(decode(t).encode()))
                                     for t, lp in step.top_logprobs])
        for step in steps
    ])


def completion_logprobs(steps: Sequence[StepOutput], decode: Decode, offset: int = 0) -> s.CompletionLogprobs:
    tokens = [decode(step.token_id) for step in steps]
    offsets = []
    for token in tokens:
        offsets.append(offset)
        offset += len(token)
    return s.CompletionLogprobs(
        tokens=tokens, token_logprobs=[_finite(step.logprob) for step in steps],
        top_logprobs=[{decode(t): _finite(lp) for t, lp in step.top_logprobs} for step in steps],
        text_offset=offsets)


def chat_response(request_id: str, created: int, model: str, results: Sequence[InferResult],
                  steps: Sequence[Sequence[StepOutput]], decode: Decode | None) -> s.ChatCompletionResponse:
    choices = [
        s.ChatChoice(index=i, message=s.AssistantMessage(content=r.text), finish_reason=r.finish_reason,
                     logprobs=chat_logprobs(steps[i], decode) if decode else None)
        for i, r in enumerate(results)
    ]
    return s.ChatCompletionResponse(id=request_id, created=created, model=model, choices=choices,
                                    usage=usage(results))


def completion_response(request_id: str, created: int, model: str, results: Sequence[InferResult],
                        steps: Sequence[Sequence[StepOutput]], decode: Decode | None,
                        num_prompts: int) -> s.CompletionResponse:
    choices = [
        s.CompletionChoice(index=i, text=r.text, finish_reason=r.finish_reason,
                           logprobs=completion_logprobs(steps[i], decode) if decode else None)
        for i, r in enumerate(results)
    ]
    return s.CompletionResponse(id=request_id, created=created, model=model, choices=choices,
                                usage=usage(results, num_prompts))


def sse(event: s.ChatCompletionChunk | s.CompletionResponse | s.ErrorResponse) -> bytes:
    """One server-sent event: ``data: {json}`` and a blank line."""
    return b"data: " + event.model_dump_json(exclude_none=False).encode() + b"\n\n"


SSE_DONE = b"data: [DONE]\n\n"


def _finite(value: float | None) -> float:
    """JSON has no -inf: a token the sampler could never pick is given the lowest float."""
    if value is None:
        return 0.0
    return max(value, -3.4e38)

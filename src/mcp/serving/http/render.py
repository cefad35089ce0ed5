"""Engine results and steps as OpenAI wire objects (schemas.py): responses, chunks, logprobs."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mcp.base.result import InferResult
from mcp.engine.sequence import StepOutput
from mcp.serving.http import schemas as s
from mcp.serving.tools.parse import ParsedAnswer
from mcp.serving.tools.plan import ToolPlan
from mcp.serving.tools.spec import ToolCall

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


def chat_message(result: InferResult, tools: ToolPlan, legacy: bool) -> tuple[s.AssistantMessage, str]:
    """A choice's message and finish reason: its calls parsed out (``tool_calls``, or a legacy
    ``function_call``) when the request offered tools."""
    answer = tools.parse(result.text)
    if not answer.tool_calls:
        return s.AssistantMessage(content=result.text), result.finish_reason
    calls = [_call_message(c) for c in answer.tool_calls]
    if legacy:
        return s.AssistantMessage(content=answer.content, function_call=calls[0].function), "function_call"
    return s.AssistantMessage(content=answer.content, tool_calls=calls), "tool_calls"


def tool_call_deltas(answer: ParsedAnswer) -> list[s.ToolCallDelta]:
    """Each call as OpenAI streams it: its id, type and name with empty arguments, then the arguments."""
    deltas = []
    for index, call in enumerate(answer.tool_calls):
        deltas.append(s.ToolCallDelta(index=index, id=call.id, type="function",
                                      function=s.FunctionCallDelta(name=call.name, arguments="")))
        deltas.append(s.ToolCallDelta(index=index, function=s.FunctionCallDelta(arguments=call.arguments)))
    return deltas


def _call_message(call: ToolCall) -> s.ToolCallMessage:
    return s.ToolCallMessage(id=call.id, function=s.FunctionCall(name=call.name, arguments=call.arguments))


def chat_response(request_id: str, created: int, model: str, results: Sequence[InferResult],
                  steps: Sequence[Sequence[StepOutput]], decode: Decode | None, tools: ToolPlan,
                  legacy: bool = False) -> s.ChatCompletionResponse:
    choices = []
    for i, r in enumerate(results):
        message, reason = chat_message(r, tools, legacy)
        choices.append(s.ChatChoice(index=i, message=message, finish_reason=reason,
                                    logprobs=chat_logprobs(steps[i], decode) if decode else None))
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

"""Engine results as Anthropic Messages wire objects: the message, its stop reason, stream events.

A choice's text is parsed for tool calls by the request's ``ToolPlan`` (as chat completions
does): its content becomes a ``text`` block, each call a ``tool_use`` block (``toolu_`` id, the
arguments as the ``input`` object). Stream events are server-sent events with the event's type
as their ``event:`` name, the way the ``anthropic`` library reads them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from mcp.base.result import InferResult
from mcp.serving.errors import WireError
from mcp.serving.http import messages_schemas as m
from mcp.serving.http.schemas import RedactionReport
from mcp.serving.tools.parse import ParsedAnswer
from mcp.serving.tools.spec import ToolCall

Decode = Callable[[Sequence[int]], str]
# Our finish reasons as Anthropic's: a deadline or a cancel ends the turn where it stood.
_STOP_REASONS = {"length": "max_tokens", "content_filter": "refusal", "tool_calls": "tool_use"}
# Our error types (OpenAI's) by HTTP status, as Anthropic names them.
_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 408: "timeout_error", 413: "request_too_large", 429: "rate_limit_error",
                503: "overloaded_error"}


def stop_reason(result: InferResult, answer: ParsedAnswer, stops: Sequence[str],
                decode: Decode) -> tuple[str, str | None]:
    """Anthropic's stop reason and the stop sequence that ended the answer (if one did)."""
    if answer.tool_calls:
        return "tool_use", None
    if result.finish_reason == "stop" and stops:
        matched = matched_stop(result, stops, decode)
        if matched is not None:
            return "stop_sequence", matched
    return _STOP_REASONS.get(result.finish_reason, "end_turn"), None


def matched_stop(result: InferResult, stops: Sequence[str], decode: Decode) -> str | None:
    """The stop sequence the engine cut the text at: the first one in the decoded tokens past
    the text the client got (the engine holds a stop string back, so the text ends before it)."""
    decoded = decode(result.token_ids)
    start = max(0, len(result.text) - max(map(len, stops)))
    found = [(at, stop) for stop in stops if (at := decoded.find(stop, start)) >= 0]
    return min(found)[1] if found else None


def tool_id(call: ToolCall) -> str:
    """Anthropic's id form, ``toolu_…``, of the call's own id."""
    return "toolu_" + call.id.removeprefix("call_")


def content_blocks(answer: ParsedAnswer) -> list[m.ResponseText | m.ResponseToolUse]:
    blocks: list[m.ResponseText | m.ResponseToolUse] = []
    if answer.content:
        blocks.append(m.ResponseText(text=answer.content))
    blocks += [m.ResponseToolUse(id=tool_id(c), name=c.name, input=json.loads(c.arguments)) for c in answer.tool_calls]
    return blocks


def message(request_id: str, model: str, result: InferResult, answer: ParsedAnswer, stops: Sequence[str],
            decode: Decode, redactions: RedactionReport | None = None) -> m.MessageResponse:
    reason, sequence = stop_reason(result, answer, stops, decode)
    return m.MessageResponse(id=request_id, model=model, content=content_blocks(answer), stop_reason=reason,
                             stop_sequence=sequence, usage=m.MessagesUsage(
                                 input_tokens=result.usage.prompt_tokens, output_tokens=result.usage.completion_tokens,
                                 cache_read_input_tokens=result.usage.cached_tokens), mcp_redactions=redactions)


def error_body(wire: WireError) -> dict:
    """Anthropic's error object: ``{"type": "error", "error": {"type", "message"}}``."""
    kind = _ERROR_TYPES.get(wire.status, "api_error" if wire.status >= 500 else "invalid_request_error")
    return m.AnthropicError(error=m.AnthropicErrorDetail(type=kind, message=wire.message)).model_dump()


# -- stream events --------------------------------------------------------------------------
def event(kind: str, **fields) -> bytes:
    """One server-sent event: ``event: <kind>`` and its JSON (which repeats the type)."""
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields}, ensure_ascii=False)}\n\n".encode()


def message_start(request_id: str, model: str, input_tokens: int) -> bytes:
    start = m.MessageResponse(id=request_id, model=model, content=[], stop_reason=None,
                              usage=m.MessagesUsage(input_tokens=input_tokens, output_tokens=0))
    return event("message_start", message=start.model_dump())


def text_block_start(index: int) -> bytes:
    return event("content_block_start", index=index, content_block={"type": "text", "text": ""})


def text_delta(index: int, text: str) -> bytes:
    return event("content_block_delta", index=index, delta={"type": "text_delta", "text": text})


def tool_use_events(index: int, call: ToolCall) -> list[bytes]:
    """A whole call as Anthropic streams one: the block with an empty input, the input's JSON as
    one ``input_json_delta``, the block's end."""
    return [event("content_block_start", index=index,
                  content_block={"type": "tool_use", "id": tool_id(call), "name": call.name, "input": {}}),
            event("content_block_delta", index=index,
                  delta={"type": "input_json_delta", "partial_json": call.arguments}),
            event("content_block_stop", index=index)]


def message_end(reason: str, sequence: str | None, result: InferResult,
                redactions: RedactionReport | None = None) -> list[bytes]:
    """``message_delta`` (with ``mcp_redactions`` when governance redacted something), ``message_stop``."""
    usage = {"input_tokens": result.usage.prompt_tokens, "output_tokens": result.usage.completion_tokens}
    extra = {"mcp_redactions": redactions.model_dump()} if redactions is not None else {}
    return [event("message_delta", delta={"stop_reason": reason, "stop_sequence": sequence}, usage=usage, **extra),
            event("message_stop")]


def error_event(wire: WireError) -> bytes:
    return event("error", error=error_body(wire)["error"])

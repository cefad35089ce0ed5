"""A finished answer (an ``InferResult`` and the request's ``ToolPlan``) as a Responses API object.

The answer's text becomes one ``message`` item and each parsed call a ``function_call`` item
(``call_id`` the call's id, ``id`` the item's). The engine's finish reason becomes the
response's status: ``length`` is ``incomplete`` (``max_output_tokens``), a governance stop
``incomplete`` (``content_filter``), a cancel or deadline ``incomplete`` with no reason; an
answer whose call parsed is ``completed`` however it ended.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from mcp.base.result import InferResult
from mcp.serving.http import responses_schema as r
from mcp.serving.http import responses_wire as w
from mcp.serving.tools.parse import ParsedAnswer
from mcp.serving.tools.spec import ToolCall

_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter", "cancelled": None, "deadline": None}


def item_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def message_item(item_id_: str, text: str, status: w.Status) -> w.OutputMessage:
    return w.OutputMessage(id=item_id_, status=status, content=[w.OutputText(text=text)])


def call_item(call: ToolCall, status: w.Status = "completed", arguments: str | None = None) -> w.OutputFunctionCall:
    return w.OutputFunctionCall(id="fc_" + call.id.removeprefix("call_"), call_id=call.id, name=call.name,
                          arguments=call.arguments if arguments is None else arguments, status=status)


def status_of(result: InferResult | None, answer: ParsedAnswer | None) -> tuple[str, w.IncompleteDetails | None]:
    """The response's status and why it is incomplete, from how the answer ended."""
    if result is None:
        return "in_progress", None
    if (answer is not None and answer.tool_calls) or result.finish_reason not in _INCOMPLETE:
        return "completed", None
    return "incomplete", w.IncompleteDetails(reason=_INCOMPLETE[result.finish_reason])  # type: ignore[arg-type]


def output_of(answer: ParsedAnswer, status: w.Status) -> list[w.OutputMessage | w.OutputFunctionCall]:
    """The answer's items: its text (if any, or if it made no call), then its calls."""
    items: list[w.OutputMessage | w.OutputFunctionCall] = []
    if answer.content or not answer.tool_calls:
        items.append(message_item(item_id("msg"), answer.content or "", status))
    items.extend(call_item(call) for call in answer.tool_calls)
    return items


def usage(result: InferResult) -> w.ResponseUsage:
    return w.ResponseUsage(input_tokens=result.usage.prompt_tokens, output_tokens=result.usage.completion_tokens,
                           total_tokens=result.usage.prompt_tokens + result.usage.completion_tokens)


@dataclass(frozen=True)
class Echo:
    """What a response repeats of its request (OpenAI's response object carries the settings)."""

    response_id: str
    model: str
    body: r.ResponseCreateRequest
    created_at: int

    @classmethod
    def of(cls, response_id: str, model: str, body: r.ResponseCreateRequest) -> Echo:
        return cls(response_id, model, body, int(time.time()))

    def response(self, status: str, output: list, *, result: InferResult | None = None,
                 incomplete: w.IncompleteDetails | None = None, error: w.ResponseError | None = None,
                 ) -> w.ResponseObject:
        body = self.body
        return w.ResponseObject(
            id=self.response_id, created_at=self.created_at, status=status, error=error,  # type: ignore[arg-type]
            incomplete_details=incomplete, instructions=body.instructions, metadata=body.metadata or {},
            model=self.model, output=output, parallel_tool_calls=body.parallel_tool_calls is not False,
            temperature=body.temperature, tool_choice=_tool_choice(body), top_p=body.top_p,
            tools=[_tool(t) for t in body.tools or ()], max_output_tokens=body.max_output_tokens,
            text=w.TextSettings(format=_format(body)), usage=usage(result) if result is not None else None,
            user=body.user)


def whole(echo: Echo, result: InferResult, answer: ParsedAnswer) -> w.ResponseObject:
    """The whole answer as one response object."""
    status, incomplete = status_of(result, answer)
    return echo.response(status, output_of(answer, "completed" if status == "completed" else "incomplete"),
                         result=result, incomplete=incomplete)


def _tool(tool: r.FunctionTool) -> dict:
    return {"type": "function", "name": tool.name, "description": tool.description,
            "parameters": tool.parameters, "strict": tool.strict}


def _tool_choice(body: r.ResponseCreateRequest) -> str | dict:
    choice = body.tool_choice
    return "auto" if choice is None else choice if isinstance(choice, str) else choice.model_dump()


def _format(body: r.ResponseCreateRequest) -> dict:
    fmt = body.text.format if body.text is not None else None
    return {"type": "text"} if fmt is None else fmt.model_dump(by_alias=True, exclude_none=True)

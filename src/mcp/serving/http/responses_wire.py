"""Wire types of ``POST /v1/responses``'s answer: the response object, its output items, and the
server-sent events of a streamed one (shapes of ``openai.types.responses``; see
``responses_fields.py`` for the version).

A response's ``output`` holds at most one ``message`` item (the answer's text) and then one
``function_call`` item per call. A streamed response is a sequence of events, each
``event: <type>`` and ``data: <json>`` with a ``sequence_number`` counting from 0:
``response.created``, ``response.in_progress``, then per item ``response.output_item.added``,
(text) ``response.content_part.added``, ``response.output_text.delta``...,
``response.output_text.done``, ``response.content_part.done``, (call)
``response.function_call_arguments.delta``, ``response.function_call_arguments.done``, then
``response.output_item.done``; last ``response.completed`` (or ``response.incomplete``, or
``error`` and ``response.failed`` when the engine failed after the 200 went out).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from mcp.serving.http.schemas import Redacted

Status = Literal["in_progress", "completed", "incomplete"]


class _Wire(BaseModel):
    pass


class OutputText(_Wire):
    type: Literal["output_text"] = "output_text"
    text: str
    annotations: list[dict[str, Any]] = Field(default_factory=list)
    logprobs: list[dict[str, Any]] = Field(default_factory=list)


class OutputMessage(_Wire):
    id: str
    type: Literal["message"] = "message"
    role: Literal["assistant"] = "assistant"
    status: Status
    content: list[OutputText]


class OutputFunctionCall(_Wire):
    id: str
    type: Literal["function_call"] = "function_call"
    call_id: str
    name: str
    arguments: str = Field(description="the arguments as a JSON object's text")
    status: Status


OutputItem = Annotated[OutputMessage | OutputFunctionCall, Field(discriminator="type")]


class InputTokensDetails(_Wire):
    cached_tokens: int = 0
    cache_write_tokens: int = 0


class OutputTokensDetails(_Wire):
    reasoning_tokens: int = 0


class ResponseUsage(_Wire):
    input_tokens: int
    input_tokens_details: InputTokensDetails = Field(default_factory=InputTokensDetails)
    output_tokens: int
    output_tokens_details: OutputTokensDetails = Field(default_factory=OutputTokensDetails)
    total_tokens: int


class IncompleteDetails(_Wire):
    reason: Literal["max_output_tokens", "content_filter"] | None


class ResponseError(_Wire):
    code: str
    message: str


class TextSettings(_Wire):
    format: dict[str, Any] = Field(default_factory=lambda: {"type": "text"})


class ResponseObject(_Wire):
    """One answer of ``POST /v1/responses``, and the state carried by its stream's lifecycle events."""

    id: str
    object: Literal["response"] = "response"
    created_at: int
    status: Literal["in_progress", "completed", "incomplete", "failed"]
    error: ResponseError | None = None
    incomplete_details: IncompleteDetails | None = None
    instructions: str | None
    metadata: dict[str, str] = Field(default_factory=dict)
    model: str
    output: list[OutputItem]
    parallel_tool_calls: bool
    temperature: float | None
    tool_choice: str | dict[str, Any]
    tools: list[dict[str, Any]]
    top_p: float | None
    max_output_tokens: int | None
    previous_response_id: None = None
    store: Literal[False] = False
    background: Literal[False] = False
    text: TextSettings
    truncation: Literal["disabled"] = "disabled"
    usage: ResponseUsage | None = None
    user: str | None = None
    mcp_redactions: Redacted = None  # streamed: in the last event's response


# -- streamed events ---------------------------------------------------------------------------
class _Event(_Wire):
    sequence_number: int


class LifecycleEvent(_Event):
    type: Literal["response.created", "response.in_progress", "response.completed", "response.incomplete",
                  "response.failed"]
    response: ResponseObject


class OutputItemEvent(_Event):
    type: Literal["response.output_item.added", "response.output_item.done"]
    output_index: int
    item: OutputItem


class ContentPartEvent(_Event):
    type: Literal["response.content_part.added", "response.content_part.done"]
    item_id: str
    output_index: int
    content_index: int = 0
    part: OutputText


class TextDeltaEvent(_Event):
    type: Literal["response.output_text.delta"] = "response.output_text.delta"
    item_id: str
    output_index: int
    content_index: int = 0
    delta: str
    logprobs: list[dict[str, Any]] = Field(default_factory=list)


class TextDoneEvent(_Event):
    type: Literal["response.output_text.done"] = "response.output_text.done"
    item_id: str
    output_index: int
    content_index: int = 0
    text: str
    logprobs: list[dict[str, Any]] = Field(default_factory=list)


class ArgumentsDeltaEvent(_Event):
    type: Literal["response.function_call_arguments.delta"] = "response.function_call_arguments.delta"
    item_id: str
    output_index: int
    delta: str


class ArgumentsDoneEvent(_Event):
    type: Literal["response.function_call_arguments.done"] = "response.function_call_arguments.done"
    item_id: str
    output_index: int
    arguments: str


class ErrorEvent(_Event):
    type: Literal["error"] = "error"
    code: str | None
    message: str
    param: str | None = None


StreamEvent = (LifecycleEvent | OutputItemEvent | ContentPartEvent | TextDeltaEvent | TextDoneEvent
               | ArgumentsDeltaEvent | ArgumentsDoneEvent | ErrorEvent)


def sse(event: StreamEvent) -> bytes:
    """One server-sent event as OpenAI sends the Responses API's: its type, then its JSON."""
    return b"event: " + event.type.encode() + b"\ndata: " + event.model_dump_json().encode() + b"\n\n"

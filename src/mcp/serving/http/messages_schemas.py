"""Wire types of the Anthropic Messages API (``/v1/messages``, ``/v1/messages/count_tokens``).

Shaped after the ``anthropic`` Python library's ``MessageCreateParams`` and ``Message`` types
(and checked against them by tests/serving/http/test_messages_clients.py). Requests are strict
as the OpenAI ones are (``schemas.py``): an unknown field is a 400 naming it. Image, document
and thinking blocks are parsed only so that the answer can say what is not taken
(``messages_convert.py``). Published fields with no effect here are in ``IGNORED``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mcp.serving.http.schemas import Count, FunctionName, JsonObject, NonEmptyText, Redacted, Text, TopK, _Request

# Accepted with no effect (hosted features: tiers, speed, regions, workspaces, containers, MCP
# servers, context editing, prompt caching, extended thinking), named in the x-mcp-ignored-fields
# header like the OpenAI routes' fields. Source: anthropic-python 2.17.0's MessageCreateParams.
IGNORED = frozenset({"cache_control", "container", "context_management", "diagnostics", "inference_geo",
                     "mcp_servers", "service_tier", "speed", "thinking", "user_profile_id", "workspace_id"})
StopReason = Literal["end_turn", "max_tokens", "stop_sequence", "tool_use", "refusal"]
_NO_EFFECT = "accepted, no effect here (named in x-mcp-ignored-fields)"


class TextBlock(_Request):
    type: Literal["text"]
    text: Text
    cache_control: JsonObject | None = None  # prompt caching hints: no effect here
    citations: list[JsonObject] | None = None


class ToolUseBlock(_Request):
    """An earlier call of the assistant's, in an assistant turn."""

    type: Literal["tool_use"]
    id: Text
    name: FunctionName
    input: JsonObject
    cache_control: JsonObject | None = None


class ToolResultBlock(_Request):
    """A tool's answer to a ``tool_use``, in a user turn."""

    type: Literal["tool_result"]
    tool_use_id: Text
    content: Text | list[Annotated[TextBlock | MediaBlock, Field(discriminator="type")]] | None = None
    is_error: bool | None = None
    cache_control: JsonObject | None = None


def _refused(schema: dict) -> None:
    """What the schema promises: no such block is taken (a 400 naming it, messages_convert.py)."""
    schema.clear()
    schema.update({"not": {}, "description": "image, document and thinking blocks are refused: this model "
                                             "reads text only"})


class MediaBlock(BaseModel):
    """A block this model cannot read (an image, a document, a model's thinking): parsed only to
    be refused by name."""

    model_config = ConfigDict(extra="allow", json_schema_extra=_refused)
    type: Literal["image", "document", "search_result", "thinking", "redacted_thinking", "server_tool_use",
                  "web_search_tool_result", "container_upload"]


ContentBlock = Annotated[TextBlock | ToolUseBlock | ToolResultBlock | MediaBlock, Field(discriminator="type")]
ToolResultBlock.model_rebuild()


class MessageParam(_Request):
    role: Literal["user", "assistant"]
    content: Text | Annotated[list[ContentBlock], Field(max_length=1024)]


class ToolParam(_Request):
    name: FunctionName
    description: Text | None = None
    input_schema: JsonObject
    type: Literal["custom"] | None = None
    cache_control: JsonObject | None = None


class _ToolChoice(_Request):
    disable_parallel_tool_use: bool | None = None


class ToolChoiceAuto(_ToolChoice):
    type: Literal["auto"]


class ToolChoiceAny(_ToolChoice):
    type: Literal["any"]


class ToolChoiceTool(_ToolChoice):
    type: Literal["tool"]
    name: FunctionName


class ToolChoiceNone(_Request):
    type: Literal["none"]


ToolChoice = Annotated[ToolChoiceAuto | ToolChoiceAny | ToolChoiceTool | ToolChoiceNone, Field(discriminator="type")]


class Metadata(_Request):
    user_id: Annotated[Text, Field(max_length=256)] | None = Field(
        None, description="the end user; with governance the audit record keeps its pseudonym, never the id")


class JSONOutputFormat(_Request):
    type: Literal["json_schema"]
    schema_: JsonObject = Field(alias="schema", description="the JSON Schema the answer's text validates against")


class OutputConfig(_Request):
    format: JSONOutputFormat | None = Field(None, description="structured output, by constrained decoding")
    effort: Literal["low", "medium", "high", "xhigh", "max"] | None = Field(None, description=_NO_EFFECT)


class _Conversation(_Request):
    """What both routes take: the conversation, its tools, its output format."""

    model: Text = Field(description="name or name:version of a served model")
    messages: Annotated[list[MessageParam], Field(min_length=1)]
    system: Text | Annotated[list[TextBlock], Field(max_length=64)] | None = None
    tools: Annotated[list[ToolParam], Field(max_length=128)] | None = None
    tool_choice: ToolChoice | None = None
    output_config: OutputConfig | None = None
    thinking: Any = Field(None, description=_NO_EFFECT)
    mcp_servers: Any = Field(None, description=_NO_EFFECT)
    context_management: Any = Field(None, description=_NO_EFFECT)
    cache_control: Any = Field(None, description=_NO_EFFECT)
    speed: Any = Field(None, description=_NO_EFFECT)


class MessagesRequest(_Conversation):
    max_tokens: Count
    stop_sequences: Annotated[list[NonEmptyText], Field(max_length=16)] | None = None
    # Sampling: in the Messages API before anthropic-python 2.x; send them as extra body fields now.
    temperature: float | None = Field(None, ge=0, le=1)
    top_p: float | None = Field(None, gt=0, le=1)
    top_k: TopK | None = None
    stream: bool = False
    metadata: Metadata | None = None
    service_tier: Any = Field(None, description=_NO_EFFECT)
    container: Any = Field(None, description=_NO_EFFECT)
    diagnostics: Any = Field(None, description=_NO_EFFECT)
    inference_geo: Any = Field(None, description=_NO_EFFECT)
    user_profile_id: Any = Field(None, description=_NO_EFFECT)
    workspace_id: Any = Field(None, description=_NO_EFFECT)


class CountTokensRequest(_Conversation):
    pass


# -- responses ------------------------------------------------------------------------------
class ResponseText(BaseModel):
    type: Literal["text"] = "text"
    text: str
    citations: None = None


class ResponseToolUse(BaseModel):
    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any]


class MessagesUsage(BaseModel):
    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None


class MessageResponse(BaseModel):
    id: str
    type: Literal["message"] = "message"
    role: Literal["assistant"] = "assistant"
    model: str
    content: list[Annotated[ResponseText | ResponseToolUse, Field(discriminator="type")]]
    stop_reason: StopReason | None
    stop_sequence: str | None = None
    usage: MessagesUsage
    mcp_redactions: Redacted = None  # streamed: on the message_delta event


class CountTokensResponse(BaseModel):
    input_tokens: int


class AnthropicErrorDetail(BaseModel):
    type: str
    message: str


class AnthropicError(BaseModel):
    type: Literal["error"] = "error"
    error: AnthropicErrorDetail

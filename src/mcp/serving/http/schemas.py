"""Wire types of the OpenAI-compatible API (pydantic; they make ``/openapi.json``).

Requests are strict (``"0.5"`` is not a temperature) and refuse unknown fields, so a typo is
a 400 naming the field instead of an option silently ignored. Numbers are bounded as the
engine's ``SamplingParams`` bounds them, so nothing reaches a model's worker that its wire
(JSON, 64-bit integers) cannot carry. ``top_k``, ``min_p``,
``repetition_penalty`` and ``ignore_eos`` are extensions (vLLM's names).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, create_model, model_validator

from mcp.base.arguments import check_model_name, check_model_source, check_unicode
from mcp.engine.params import MAX_COUNT, SEED_RANGE
from mcp.serving.http import fields as published
from mcp.serving.redactions import redactions_body
from mcp.serving.request import RESERVED_TEMPLATE_KWARGS

if TYPE_CHECKING:
    from mcp.governance.redactions import Redactions

# Request text: a lone surrogate (JSON's "\\ud800") is a 400 naming the field, not a tokenizer crash.
Text = Annotated[str, AfterValidator(lambda value: check_unicode(value, "the text"))]
# JSON Schema's integer takes 5.0 (JSON has one number type; Python's parser makes it a float): so
# does the server, and only that, for the schema and the server to agree (strict otherwise). The
# bounds come first, or pydantic leaves them out of the schema.
_INTEGRAL = BeforeValidator(lambda value: int(value) if isinstance(value, float) and value.is_integer() else value)
Count = Annotated[int, Field(ge=1, le=MAX_COUNT), _INTEGRAL]
TopK = Annotated[int, Field(ge=0, le=MAX_COUNT), _INTEGRAL]
Seed = Annotated[int, Field(ge=SEED_RANGE[0], le=SEED_RANGE[1]), _INTEGRAL]  # what the engine's generator takes
NumLogprobs = Annotated[int, Field(ge=0, le=20), _INTEGRAL]
NonEmptyText = Annotated[Text, Field(min_length=1)]  # a prompt or a stop string
# Admin names and sources (docs/api.md); the schema states the rule, the validator says it in words.
ModelName = Annotated[str, AfterValidator(lambda value: check_model_name(value, "it")),
                      Field(json_schema_extra={"pattern": "^[A-Za-z0-9][A-Za-z0-9._-]*$", "minLength": 1,
                                               "maxLength": 64})]
ModelSource = Annotated[str, AfterValidator(lambda value: check_model_source(value, "it")),
                        Field(json_schema_extra={"minLength": 1, "maxLength": 4096, "pattern": "^[^\\x00-\\x1f\\x7f]*$"})]
FinishReason = Literal["stop", "length", "cancelled", "deadline", "content_filter",  # content_filter: governance
                       "tool_calls", "function_call"]
FunctionName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")]
LogitBias = Annotated[dict[Annotated[str, Field(pattern=r"^[0-9]{1,10}$")], Annotated[float, Field(ge=-100, le=100)]],
                      Field(max_length=300, json_schema_extra={"additionalProperties": False})]
JsonObject = dict[str, Any]


class _Request(BaseModel):
    # JSON's NaN and Infinity (which Python's parser takes) are no sampling value either
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class _Response(BaseModel):
    pass


class StreamOptions(_Request):
    include_usage: bool = False


def _text_parts_only(schema: dict) -> None:
    """What the schema promises: text and refusal parts (a media part is a 400, see ContentPart)."""
    text = {"type": "object", "additionalProperties": False, "required": ["type", "text"], "properties": {
        "type": {"const": "text"}, "text": {"type": "string"},
        "cache_control": {"anyOf": [{"type": "object"}, {"type": "null"}]}}}
    refusal = {"type": "object", "additionalProperties": False, "required": ["type", "refusal"], "properties": {
        "type": {"const": "refusal"}, "refusal": {"type": "string"}}}
    description = schema.get("description", "")
    schema.clear()
    schema.update({"oneOf": [text, refusal], "description": description})


class ContentPart(BaseModel):
    """A part of a message's content: ``text`` (and ``refusal``) are read; an image, audio or file
    part is parsed only so that the answer can say "this model takes no images" (convert.py)."""

    model_config = ConfigDict(extra="allow", strict=True, json_schema_extra=_text_parts_only)
    type: Literal["text", "refusal", "image_url", "input_audio", "file", "image", "audio", "input_image"]
    text: Text | None = None
    refusal: Text | None = None
    cache_control: JsonObject | None = None  # Anthropic-style prompt caching hints: no effect here

    @model_validator(mode="after")
    def _text_parts_are_strict(self) -> ContentPart:
        if self.type in ("text", "refusal"):
            if self.model_extra:
                raise ValueError(f"unknown field {next(iter(self.model_extra))!r} in a {self.type} part")
            if self.type == "refusal" and (self.text is not None or self.cache_control is not None):
                raise ValueError("a refusal part has only its 'refusal' string")
            if self.type == "text" and self.refusal is not None:
                raise ValueError("a text part has no 'refusal'; send a refusal part")
            if getattr(self, self.type) is None:
                raise ValueError(f"a {self.type} part needs its {self.type!r} string")
        return self


class FunctionCall(_Request):
    name: FunctionName
    arguments: Text = Field(description="the arguments as a JSON object's text")


class ToolCallMessage(_Request):
    id: Text
    type: Literal["function"] = "function"
    function: FunctionCall


class ChatMessage(_Request):
    # Only an assistant turn may leave content out or null (it may only call tools): the schema says
    # so, and the server's check (convert.py) says it in words.
    model_config = ConfigDict(json_schema_extra={"anyOf": [
        {"properties": {"role": {"const": "assistant"}}},
        {"required": ["content"], "properties": {"content": {"not": {"type": "null"}}}}]})
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: Text | list[ContentPart] | None = None  # None: an assistant turn that only calls tools
    name: Text | None = None
    tool_calls: list[ToolCallMessage] | None = None  # assistant turns
    tool_call_id: Text | None = None  # tool turns: the call this answers
    function_call: FunctionCall | None = None  # legacy assistant turns
    refusal: Text | None = None  # accepted on assistant turns; no effect here
    audio: JsonObject | None = None  # an earlier audio answer's id: no effect here


class FunctionDefinition(_Request):
    name: FunctionName
    description: Text | None = None
    parameters: JsonObject | None = None
    strict: bool | None = None


class ToolDefinition(_Request):
    type: Literal["function"]
    function: FunctionDefinition


class FunctionName_(_Request):
    name: FunctionName


class NamedToolChoice(_Request):
    type: Literal["function"]
    function: FunctionName_


class TextFormat(_Request):
    type: Literal["text"]


class JSONObjectFormat(_Request):
    type: Literal["json_object"]


class JSONSchemaSpec(_Request):
    name: Text = Field(min_length=1, max_length=64)
    description: Text | None = None
    schema_: dict[str, Any] | bool = Field(True, alias="schema", description="the JSON Schema the output validates against")
    strict: bool | None = None


class JSONSchemaFormat(_Request):
    type: Literal["json_schema"]
    json_schema: JSONSchemaSpec


class RegexFormat(_Request):
    """Our extension: the whole output matches ``regex``."""

    type: Literal["regex"]
    regex: NonEmptyText


class GrammarFormat(_Request):
    """Our extension: the output is a sentence of ``grammar`` (Lark syntax, llguidance's dialect)."""

    type: Literal["grammar"]
    grammar: NonEmptyText


ResponseFormat = Annotated[TextFormat | JSONObjectFormat | JSONSchemaFormat | RegexFormat | GrammarFormat,
                           Field(discriminator="type")]


class _Sampling(_Request):
    model: Text = Field("", description="name or name:version; empty: the server's default model")
    max_tokens: Count | None = None
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    top_k: TopK | None = None
    min_p: float | None = Field(None, ge=0, lt=1)
    repetition_penalty: float | None = Field(None, gt=0)
    presence_penalty: float | None = Field(None, ge=-2, le=2)
    frequency_penalty: float | None = Field(None, ge=-2, le=2)
    seed: Seed | None = None
    stop: NonEmptyText | Annotated[list[NonEmptyText], Field(max_length=16)] | None = None  # the engine's limits
    ignore_eos: bool = False
    n: Count = 1
    stream: bool = False
    stream_options: StreamOptions | None = None
    user: Text | None = None
    response_format: ResponseFormat | None = None
    logit_bias: LogitBias | None = Field(None, description="token id (as a string) -> bias in [-100, 100], "
                                                           "added to its logit before sampling")


def _ignored(name: str, fields: frozenset[str]) -> type[_Request]:
    """A base declaring published fields that have no effect here (fields.py): accepted as any JSON."""
    return create_model(name, __base__=_Request, **{  # type: ignore[call-overload]
        field: (Any, Field(None, description="published by OpenAI; accepted, no effect here "
                                             "(named in the x-mcp-ignored-fields header)"))
        for field in sorted(fields)})


class ChatCompletionRequest(_Sampling, _ignored("_IgnoredChatFields", published.CHAT_IGNORED)):
    messages: list[ChatMessage] = Field(min_length=1)
    max_completion_tokens: Count | None = None
    logprobs: bool = False
    top_logprobs: NumLogprobs | None = None
    tools: Annotated[list[ToolDefinition], Field(max_length=128)] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedToolChoice | None = None
    parallel_tool_calls: bool | None = None
    functions: Annotated[list[FunctionDefinition], Field(max_length=128)] | None = None  # legacy tools
    function_call: Literal["none", "auto"] | FunctionName_ | None = None  # legacy tool_choice
    metadata: Annotated[dict[Annotated[str, Field(max_length=64)], Annotated[Text, Field(max_length=512)]],
                        Field(max_length=16)] | None = None
    chat_template_kwargs: JsonObject | None = Field(  # an extension (vLLM's): to the chat template
        None, json_schema_extra={"propertyNames": {"not": {"enum": sorted(RESERVED_TEMPLATE_KWARGS)}}})


class CompletionRequest(_Sampling, _ignored("_IgnoredCompletionFields", published.COMPLETION_IGNORED)):
    prompt: NonEmptyText | Annotated[list[NonEmptyText], Field(min_length=1)]
    logprobs: NumLogprobs | None = None
    echo: bool = Field(False, json_schema_extra={"enum": [False]})  # not supported: true is a 400


# -- responses ------------------------------------------------------------------------------
class Usage(_Response):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class RedactionReport(_Response):
    """What governance policies redacted in the request (serving/redactions.py): spans replaced,
    by finding kind, in the prompt and in the answer."""

    count: int
    input: dict[str, int]
    output: dict[str, int]

    @classmethod
    def of(cls, redactions: Redactions | None) -> RedactionReport | None:
        """The report of ``redactions``; None (the field left out) when nothing was redacted."""
        body = redactions_body(redactions)
        return None if body is None else cls(**body)


# An extension field OpenAI's and Anthropic's clients keep as an extra: left out when nothing was redacted.
Redacted = Annotated[RedactionReport | None, Field(
    exclude_if=lambda value: value is None,
    description="what governance policies redacted (present only when something was; docs/api.md)")]


class TopLogprob(_Response):
    token: str
    logprob: float
    bytes: list[int] | None = None


class TokenLogprob(TopLogprob):
    top_logprobs: list[TopLogprob]


class ChoiceLogprobs(_Response):
    content: list[TokenLogprob] | None


class AssistantMessage(_Response):
    role: Literal["assistant"] = "assistant"
    content: str | None
    tool_calls: list[ToolCallMessage] | None = None
    function_call: FunctionCall | None = None  # a legacy (functions) request's one call


class ChatChoice(_Response):
    index: int
    message: AssistantMessage
    finish_reason: FinishReason
    logprobs: ChoiceLogprobs | None = None


class ChatCompletionResponse(_Response):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[ChatChoice]
    usage: Usage
    mcp_redactions: Redacted = None


class FunctionCallDelta(_Response):
    name: str | None = None
    arguments: str | None = None


class ToolCallDelta(_Response):
    index: int
    id: str | None = None
    type: Literal["function"] | None = None
    function: FunctionCallDelta


class ChatDelta(_Response):
    role: Literal["assistant"] | None = None
    content: str | None = None
    tool_calls: list[ToolCallDelta] | None = None
    function_call: FunctionCallDelta | None = None  # a legacy (functions) request's call


class ChatChunkChoice(_Response):
    index: int
    delta: ChatDelta
    finish_reason: FinishReason | None = None
    logprobs: ChoiceLogprobs | None = None


class ChatCompletionChunk(_Response):
    """One ``data:`` event of a streamed chat completion."""

    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChatChunkChoice]
    usage: Usage | None = None
    mcp_redactions: Redacted = None  # on the stream's last chunk


class CompletionLogprobs(_Response):
    tokens: list[str]
    token_logprobs: list[float]
    top_logprobs: list[dict[str, float]]
    text_offset: list[int]


class CompletionChoice(_Response):
    index: int
    text: str
    finish_reason: FinishReason | None = None
    logprobs: CompletionLogprobs | None = None


class CompletionResponse(_Response):
    """A text completion, and also each ``data:`` event of a streamed one."""

    id: str
    object: Literal["text_completion"] = "text_completion"
    created: int
    model: str
    choices: list[CompletionChoice]
    usage: Usage | None = None
    mcp_redactions: Redacted = None  # streamed: on the last chunk


class ModelCard(_Response):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "mcp2026"


class ModelList(_Response):
    object: Literal["list"] = "list"
    data: list[ModelCard]


class ErrorDetail(_Response):
    message: str
    type: str
    param: str | None
    code: str | None


class ErrorResponse(_Response):
    error: ErrorDetail


class HealthResponse(_Response):
    status: str


class ProbeResponse(_Response):
    """What Argo Rollouts' web provider reads (``jsonPath: "{$.value}"``)."""

    metric: str
    value: float
    healthy: bool
    window_s: float
    samples: int


# -- admin ----------------------------------------------------------------------------------
class LoadModelRequest(_Request):
    name: ModelName
    source: ModelSource = Field(description="a .mcp path on the server or a catalog name")
    version: ModelName = "1"
    precision: Literal["auto", "fp32", "bf16", "f16", "int4", "int8"] | None = None
    activate: bool = Field(True, description="make it the name's current version (a swap) once ready")


class SwapModelRequest(_Request):
    version: ModelName


class ModelVersionInfo(_Response):
    name: str
    version: str
    source: str
    current: bool
    in_flight: int
    load_to_ready_s: float


class ModelVersionList(_Response):
    data: list[ModelVersionInfo]

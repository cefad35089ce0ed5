"""Wire types of ``POST /v1/responses``'s request (pydantic; they make ``/openapi.json``).

The shapes are OpenAI's (``openai.types.responses``, see ``responses_fields.py`` for the
version), narrowed to what this stateless server runs: ``input`` is text or a list of
``message``, ``function_call`` and ``function_call_output`` items; ``tools`` are function
tools; ``text.format`` is ``text``, ``json_object`` or ``json_schema`` (and our ``regex`` and
``grammar``). As on chat, the request is strict and refuses unknown fields; an item or tool of
another type, or a field that needs state kept on the server, is a 400 that says why. The
answer's types are in ``responses_wire.py``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

from mcp.serving.http import responses_fields as published
from mcp.serving.http.schemas import (
    Count,
    FunctionName,
    GrammarFormat,
    JSONObjectFormat,
    JsonObject,
    RegexFormat,
    Seed,
    Text,
    TextFormat,
    TopK,
    _ignored,
    _Request,
)

ITEM_TYPES = ("message", "function_call", "function_call_output")
_MEDIA = {"input_image": "images", "input_file": "files", "input_audio": "audio"}
Status = Literal["in_progress", "completed", "incomplete"]


def _text_parts_only(schema: dict) -> None:
    """What the schema promises: text parts (a media part is a 400 in words, see InputContentPart)."""
    text = {"type": "object", "required": ["type", "text"], "additionalProperties": False, "properties": {
        "type": {"enum": ["input_text", "output_text"]}, "text": {"type": "string"},
        "annotations": {"type": "array"}, "logprobs": {"type": "array"}, "prompt_cache_breakpoint": {"type": "object"}}}
    refusal = {"type": "object", "required": ["type", "refusal"], "additionalProperties": False, "properties": {
        "type": {"const": "refusal"}, "refusal": {"type": "string"}}}
    schema.clear()
    schema.update({"oneOf": [text, refusal]})


class InputContentPart(_Request):
    """A text part of an input item (``input_text``, an earlier answer's ``output_text``, a
    ``refusal``); a media part is parsed only to be refused in words ("this model takes no images")."""

    model_config = ConfigDict(extra="allow", json_schema_extra=_text_parts_only)
    type: Literal["input_text", "output_text", "refusal", "input_image", "input_file", "input_audio"]
    text: Text | None = None
    refusal: Text | None = None
    annotations: list[Any] | None = None  # an earlier answer's output_text: no effect here
    logprobs: list[Any] | None = None
    prompt_cache_breakpoint: JsonObject | None = None  # a hosted prompt-cache hint: no effect here

    @model_validator(mode="after")
    def _text_parts_are_text(self) -> InputContentPart:
        if self.type in _MEDIA:
            raise ValueError(f"an {self.type} part: this model takes no {_MEDIA[self.type]}; send text parts only")
        if self.model_extra:
            raise ValueError(f"unknown field {next(iter(self.model_extra))!r} in an {self.type} part")
        needs = "refusal" if self.type == "refusal" else "text"
        if getattr(self, needs) is None:
            raise ValueError(f"an {self.type} part needs its {needs!r} string")
        return self

    @property
    def content(self) -> str:
        return self.refusal if self.type == "refusal" else self.text or ""  # type: ignore[return-value]


Content = Text | Annotated[list[InputContentPart], Field(max_length=256)]


class MessageItem(_Request):
    """A turn of the conversation; ``type`` may be left out (OpenAI's easy input message)."""

    type: Literal["message"] = "message"
    role: Literal["user", "assistant", "system", "developer"]
    content: Content
    id: Text | None = None
    status: Status | None = None
    phase: Literal["commentary", "final_answer"] | None = None


class FunctionCallItem(_Request):
    """A call the model made earlier (an earlier answer's ``function_call`` output item)."""

    type: Literal["function_call"]
    call_id: Text
    name: FunctionName
    arguments: Text = Field(description="the arguments as a JSON object's text")
    id: Text | None = None
    status: Status | None = None
    namespace: Text | None = None
    caller: JsonObject | None = None


class FunctionCallOutputItem(_Request):
    """What the caller's function returned for ``call_id``."""

    type: Literal["function_call_output"]
    output: Content
    call_id: Text  # optional in OpenAI's schema (it can match stored calls); required here: nothing is stored
    id: Text | None = None
    status: Status | None = None
    name: Text | None = None
    namespace: Text | None = None
    caller: JsonObject | None = None


def _item_type(value: Any) -> str:
    return value.get("type", "message") if isinstance(value, dict) else getattr(value, "type", "message")


InputItem = Annotated[Annotated[MessageItem, Tag("message")] | Annotated[FunctionCallItem, Tag("function_call")]
                      | Annotated[FunctionCallOutputItem, Tag("function_call_output")], Discriminator(_item_type)]


class FunctionTool(_Request):
    type: Literal["function"]
    name: FunctionName
    description: Text | None = None
    parameters: JsonObject | None = None
    strict: bool | None = None
    allowed_callers: Any = Field(None, description="accepted, no effect here")
    async_: Any = Field(None, alias="async", description="accepted, no effect here")
    defer_loading: Any = Field(None, description="accepted, no effect here")
    output_schema: Any = Field(None, description="accepted, no effect here")


class NamedFunction(_Request):
    type: Literal["function"]
    name: FunctionName


class AllowedTools(_Request):
    """``tool_choice`` ``allowed_tools``: only these functions are offered, called as ``mode`` says."""

    type: Literal["allowed_tools"]
    mode: Literal["auto", "required"]
    tools: Annotated[list[NamedFunction], Field(min_length=1, max_length=128)]


class JSONSchemaTextFormat(_Request):
    type: Literal["json_schema"]
    name: Text = Field(min_length=1, max_length=64)
    schema_: dict[str, Any] | bool = Field(True, alias="schema", description="the JSON Schema the output validates against")
    description: Text | None = None
    strict: bool | None = None


TextFormatConfig = Annotated[TextFormat | JSONObjectFormat | JSONSchemaTextFormat | RegexFormat | GrammarFormat,
                             Field(discriminator="type")]


class TextConfig(_Request):
    format: TextFormatConfig | None = None
    verbosity: Any = Field(None, description="accepted, no effect here (named in x-mcp-ignored-fields)")


def _stateless(field: str, value: Any) -> Any:
    if value not in (None, False):
        raise ValueError(f"{field} needs state kept on the server, and this server is stateless (it keeps no "
                         "responses, conversations or prompts); leave it out and send the whole conversation "
                         "as input")
    return value


class ResponseCreateRequest(_ignored("_IgnoredResponseFields", published.IGNORED)):
    model: Text = Field("", description="name or name:version; empty: the server's default model")
    input: Text | Annotated[list[InputItem], Field(min_length=1, max_length=4096)]
    instructions: Text | None = None
    tools: Annotated[list[FunctionTool], Field(max_length=128)] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedFunction | AllowedTools | None = None
    parallel_tool_calls: bool | None = None
    text: TextConfig | None = None
    max_output_tokens: Count | None = None
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    top_k: TopK | None = None
    min_p: float | None = Field(None, ge=0, lt=1)
    repetition_penalty: float | None = Field(None, gt=0)
    seed: Seed | None = None
    stream: bool = False
    user: Text | None = None
    metadata: Annotated[dict[Annotated[str, Field(max_length=64)], Annotated[Text, Field(max_length=512)]],
                        Field(max_length=16)] | None = None
    store: Literal[False] | None = Field(None, description="false or absent: this server keeps no responses")
    background: Literal[False] | None = Field(None, description="false or absent: answers come on the request")
    previous_response_id: None = Field(None, description="absent: send the whole conversation as input")
    conversation: None = Field(None, description="absent: send the whole conversation as input")
    prompt: None = Field(None, description="absent: stored prompt templates need state")

    @field_validator(*sorted(published.STATEFUL), mode="before")
    @classmethod
    def _no_state(cls, value: Any, info) -> Any:
        return _stateless(info.field_name, value)

    @field_validator("input", mode="before")
    @classmethod
    def _known_items(cls, value: Any) -> Any:
        for index, item in enumerate(value if isinstance(value, list) else ()):
            kind = item.get("type", "message") if isinstance(item, dict) else "message"
            if kind not in ITEM_TYPES:
                raise ValueError(f"input[{index}] is a {kind!r} item; this server takes {', '.join(ITEM_TYPES)} "
                                 "items (it runs no hosted tools and keeps no items to reference)")
        return value

    @field_validator("tools", mode="before")
    @classmethod
    def _function_tools(cls, value: Any) -> Any:
        for index, tool in enumerate(value if isinstance(value, list) else ()):
            kind = tool.get("type") if isinstance(tool, dict) else None
            if isinstance(kind, str) and kind != "function":
                raise ValueError(f"tools[{index}] is a {kind!r} tool; this server runs function tools only "
                                 "(it hosts no built-in tools)")
        return value

"""The typed tools of a ``ServingRequest`` (both transports build them) and the calls parsed back.

``Tool`` is one function the model may call (its JSON Schema ``parameters``); ``ToolChoice``
says whether it must (``required``, or one ``function`` by name), may (``auto``) or may not
(``none``); ``ToolCall`` is one call the model made, its ``arguments`` a JSON text as OpenAI
sends it.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp.serving.errors import FieldError

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")  # OpenAI's function names (a dot allowed, as vLLM does)
ChoiceMode = Literal["auto", "none", "required", "function"]


@dataclass(frozen=True)
class Tool:
    """A function the model may call: its name, what it does, its arguments' JSON Schema."""

    name: str
    description: str | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise FieldError(f"tool name {self.name!r} is not 1-64 letters, digits, '_', '-' or '.'", "tools")

    def as_template_tool(self) -> dict[str, Any]:
        """The tool as Hugging Face chat templates take it (OpenAI's ``{"type": "function", ...}``)."""
        function: dict[str, Any] = {"name": self.name}
        if self.description:
            function["description"] = self.description
        function["parameters"] = dict(self.parameters) or {"type": "object", "properties": {}}
        return {"type": "function", "function": function}


@dataclass(frozen=True)
class ToolChoice:
    mode: ChoiceMode = "auto"
    name: str | None = None  # the function a "function" choice names

    def __post_init__(self) -> None:
        if (self.mode == "function") != (self.name is not None):
            raise FieldError("a named tool choice names one function; the others name none", "tool_choice")

    @property
    def forced(self) -> bool:
        """The answer must be a tool call (``required``, or a named function)."""
        return self.mode in ("required", "function")


AUTO = ToolChoice()


@dataclass(frozen=True)
class ToolCall:
    """One call the model made: ``arguments`` is the JSON text of an object."""

    name: str
    arguments: str
    id: str = field(default_factory=lambda: f"call_{uuid.uuid4().hex[:24]}")

    def as_message(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


def checked_choice(choice: ToolChoice, tools: Sequence[Tool]) -> ToolChoice:
    """``choice`` against the request's tools: a forced choice needs tools, a named one a tool of that name."""
    if choice.forced and not tools:
        raise FieldError(f"tool_choice is {choice.mode!r} but the request has no tools; send tools", "tool_choice")
    if choice.name is not None and choice.name not in {t.name for t in tools}:
        raise FieldError(f"tool_choice names function {choice.name!r}, which is not in tools "
                         f"({', '.join(t.name for t in tools)})", "tool_choice")
    return choice


def template_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A message as chat templates read it: ``content`` a string (``""`` for an assistant turn that
    only calls tools) and each call's ``arguments`` a mapping where they are a JSON object (what
    Hugging Face templates expect; transformers and vLLM pass them so)."""
    out = {**message, "content": message.get("content") or ""}
    if message.get("tool_calls"):
        out["tool_calls"] = [_template_call(call) for call in message["tool_calls"]]
    return out


def _template_call(call: Mapping[str, Any]) -> dict[str, Any]:
    function = dict(call["function"])
    try:
        arguments = json.loads(function["arguments"])
    except (TypeError, ValueError):
        arguments = function["arguments"]
    return {**call, "function": {**function, "arguments": arguments}, "name": function["name"],
            "arguments": arguments}

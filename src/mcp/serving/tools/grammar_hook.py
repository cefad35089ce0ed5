"""The grammar that forces a tool call (``tool_choice`` ``required`` or a named function).

``tool_call_grammar`` turns the offered tools' JSON Schemas into a grammar format
(``engine.grammar.json_schemas_format``, llguidance): the answer is one call object in the
template family's format, ``{"name": <one of the names>, "arguments": <valid arguments>}``,
closed by the family's end text. The prompt already holds the opening (``<tool_call>``,
``[TOOL_CALLS][``: ``prompt.continuation``), so the grammar covers what follows it. The engine
masks every step with it, so the call always parses and its arguments validate, whatever the
model would rather write. ``validate_arguments`` checks them again when parsed (the parser
also reads free, ``auto`` answers).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import jsonschema

from mcp.base.errors import InvalidRequestError
from mcp.engine.grammar import ResponseFormat, json_schemas_format
from mcp.serving.errors import FieldError

if TYPE_CHECKING:
    from mcp.serving.tools.prompt import Family
    from mcp.serving.tools.spec import Tool

_CLOSING = {"hermes": "</tool_call>", "fallback": "</tool_call>", "mistral": "]", "llama3": ""}


def tool_call_grammar(family: Family, tools: Sequence[Tool]) -> ResponseFormat:
    """The grammar that forces one call of one of ``tools`` (all of them for ``required``, the
    named one otherwise), in ``family``'s format, after the opening the prompt holds. A schema
    the grammar engine cannot compile is a ``FieldError`` on ``tools`` naming the problem."""
    key = "parameters" if family == "llama3" else "arguments"
    schemas = [_call_schema(tool.name, tool.parameters, key) for tool in tools]
    try:
        return json_schemas_format(schemas, suffix=_CLOSING[family], strict=False)
    except InvalidRequestError as error:
        raise FieldError(f"tools cannot be forced: the grammar engine cannot compile their JSON schemas "
                         f"({str(error).removeprefix('response_format grammar cannot be compiled: ')})",
                         "tools") from None


def _call_schema(name: str, parameters: Mapping[str, Any], key: str) -> dict[str, Any]:
    """One call as a JSON object: the name (fixed) first, then the arguments. Arguments that
    declare properties and say nothing of others take no others: a small model given the choice
    invents keys instead of filling the declared ones."""
    arguments = dict(parameters) or {"type": "object"}
    if "properties" in arguments and "additionalProperties" not in arguments:
        arguments["additionalProperties"] = False
    return {"type": "object", "properties": {"name": {"const": name}, key: arguments},
            "required": ["name", key], "additionalProperties": False}


def validate_arguments(arguments: Any, schema: Mapping[str, Any]) -> str | None:
    """Why ``arguments`` do not satisfy the tool's JSON Schema, or None when they do (a schema
    that is itself invalid checks nothing)."""
    try:
        jsonschema.validate(arguments, dict(schema) or {"type": "object"})
    except jsonschema.ValidationError as error:
        return error.message
    except jsonschema.SchemaError:
        return None
    return None

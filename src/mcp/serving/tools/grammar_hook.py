"""Where the grammar engine forces a tool call (issue 31 item 2).

``tool_call_grammar`` takes the offered tools and a forced choice (``required``, or one function
by name) and returns the format that constrains decoding so that the answer is one call, in the
template family's format, that parses and whose arguments validate against the tool's JSON
Schema (llguidance, ``engine/grammar.py``: ``json_schemas_format``). The answer then starts
from the assistant's turn itself (no ``prompt.continuation``): the grammar writes the opening
text. A tool whose schema the engine cannot compile falls back to the continuation and the
parser (``parse.py``, ``validate_arguments``): an answer that is no valid call stays text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jsonschema

from mcp.base.errors import InvalidRequestError
from mcp.engine.grammar import ResponseFormat, json_schemas_format
from mcp.serving.tools.prompt import Family
from mcp.serving.tools.spec import Tool, ToolChoice

# The text around one call, per family (parse.py reads each back). Mistral's [TOOL_CALLS] is a
# special token a grammar cannot write as text: the bare array parses too.
_WRAPS: dict[str, tuple[str, str]] = {"hermes": ("<tool_call>\n", "\n</tool_call>"),
                                      "fallback": ("<tool_call>", "</tool_call>"),
                                      "mistral": ("[", "]"), "llama3": ("", "")}


def tool_call_grammar(family: Family, tools: Sequence[Tool], choice: ToolChoice) -> ResponseFormat | None:
    """The format that forces one call of the offered tools, or ``None`` when the choice does not
    force a call (or a tool's schema cannot be compiled)."""
    if not choice.forced:
        return None
    key = "parameters" if family == "llama3" else "arguments"
    schemas = [_call_schema(tool, key) for tool in tools if choice.name in (None, tool.name)]
    prefix, suffix = _WRAPS[family]
    try:
        return json_schemas_format(schemas, prefix=prefix, suffix=suffix, strict=False)
    except InvalidRequestError:
        return None


def _call_schema(tool: Tool, key: str) -> dict[str, Any]:
    """One call of ``tool`` as JSON: its name, then its arguments (in that order)."""
    return {"type": "object", "properties": {"name": {"const": tool.name},
                                             key: closed(dict(tool.parameters)) or {"type": "object"}},
            "required": ["name", key], "additionalProperties": False}


def closed(schema: Any) -> Any:
    """``schema`` with every object that lists its ``properties`` and says nothing of others
    closed to them (``additionalProperties: false``), as vLLM's grammar backends do by default:
    a forced call then ends once its declared arguments are written, instead of a small model
    going on with keys the function does not take (JSON Schema would allow them). A schema that
    says ``additionalProperties`` keeps what it says."""
    if isinstance(schema, list):
        return [closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: closed(value) if key in _SUBSCHEMAS else value for key, value in schema.items()}
    for key in ("properties", "patternProperties", "$defs", "definitions"):
        if isinstance(out.get(key), dict):
            out[key] = {name: closed(value) for name, value in out[key].items()}
    if isinstance(schema.get("properties"), dict) and "additionalProperties" not in schema \
            and "patternProperties" not in schema:
        out["additionalProperties"] = False
    return out


# keywords whose value is a schema or a list of schemas
_SUBSCHEMAS = frozenset(("items", "prefixItems", "anyOf", "oneOf", "allOf", "additionalProperties"))


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

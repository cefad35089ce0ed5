"""Where the grammar engine will force a tool call (issue 31 item 1, branch ``api-structured``).

``tool_call_grammar`` takes the offered tools' JSON Schemas (and whether one function is named)
and returns the grammar that constrains decoding so that the answer is a call that parses and
whose arguments validate. Until the grammar engine lands it returns ``None``: a forced choice is
then served by starting the assistant's turn with the call's opening text (``prompt.continuation``)
and by parsing and validating what the model wrote (``parse.py``, ``validate_arguments``); an
answer that is no valid call stays text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jsonschema


def tool_call_grammar(schemas: Sequence[Mapping[str, Any]], named: str | None = None) -> Any | None:
    """The grammar that forces one call of these functions (``{"name", "parameters"}`` each);
    ``None`` while no grammar engine is wired in."""
    return None


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

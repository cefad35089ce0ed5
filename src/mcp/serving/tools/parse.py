"""A model's answer split into text and tool calls, per template family (``prompt.family_of``).

- ``hermes`` and ``fallback``: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``,
  any number, text around them kept as content (Hermes, Qwen 2/2.5/3, our fallback prompt).
- ``llama3``: the answer is one JSON object ``{"name": ..., "parameters": {...}}`` (or
  ``arguments``), optionally after ``<|python_tag|>``; several separated by ``;``.
- ``mistral``: ``[TOOL_CALLS]`` then a JSON array of ``{"name", "arguments"}`` (the marker may
  be gone when special tokens are skipped in decoding: an answer that is such an array counts).

A call whose JSON does not parse, or names no known tool, is left in the content: the answer
is then text (finish reason as the engine gave it), never a made-up call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from mcp.serving.tools.prompt import Family
from mcp.serving.tools.spec import ToolCall

_HERMES = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class ParsedAnswer:
    content: str | None  # None: the answer is only calls
    tool_calls: tuple[ToolCall, ...] = ()


def parse_answer(text: str, family: Family, tool_names: Collection[str]) -> ParsedAnswer:
    """``text`` (with any forced start already in front) as content and calls."""
    if family == "llama3":
        calls, rest = _parse_llama3(text, tool_names)
    elif family == "mistral":
        calls, rest = _parse_mistral(text, tool_names)
    else:
        calls, rest = _parse_hermes(text, tool_names)
    if not calls:
        return ParsedAnswer(text)
    return ParsedAnswer(rest.strip() or None, tuple(calls))


def call_start(family: Family) -> str:
    """The text that opens a call in the family's format (a stream holds text back from here)."""
    return {"llama3": "{", "mistral": "["}.get(family, "<tool_call>")


def _parse_hermes(text: str, names: Collection[str]) -> tuple[list[ToolCall], str]:
    calls, kept, end = [], [], 0
    for match in _HERMES.finditer(text):
        call = _call(_first_json(match.group(1)), names, "arguments")
        if call is None:
            continue
        calls.append(call)
        kept.append(text[end:match.start()])
        end = match.end()
    kept.append(text[end:])
    return calls, "".join(kept)


def _parse_llama3(text: str, names: Collection[str]) -> tuple[list[ToolCall], str]:
    body = text.strip().removeprefix("<|python_tag|>").strip()
    if not body.startswith("{"):
        return [], text
    calls = [_call(_first_json(part), names, "parameters") for part in _split_top_level(body)]
    return ([], text) if any(c is None for c in calls) else ([c for c in calls if c is not None], "")


def _parse_mistral(text: str, names: Collection[str]) -> tuple[list[ToolCall], str]:
    head, marker, tail = text.partition("[TOOL_CALLS]")
    body = tail if marker else text.lstrip()
    if not body.startswith("["):
        return [], text
    items = _first_json(body)
    if not isinstance(items, list):
        return [], text
    calls = [_call(item, names, "arguments") for item in items]
    return ([], text) if not calls or any(c is None for c in calls) else (
        [c for c in calls if c is not None], head if marker else "")


def _first_json(text: str) -> Any:
    try:
        return _DECODER.raw_decode(text.strip())[0]
    except ValueError:
        return None


def _split_top_level(body: str) -> list[str]:
    """Llama 3's ``{...}; {...}``: the JSON objects one after another."""
    parts, rest = [], body
    while rest:
        try:
            _, end = _DECODER.raw_decode(rest)
        except ValueError:
            return [*parts, rest]
        parts.append(rest[:end])
        rest = rest[end:].lstrip().lstrip(";").lstrip()
    return parts


def _call(value: Any, names: Collection[str], arguments_key: str) -> ToolCall | None:
    if not isinstance(value, dict) or value.get("name") not in names:
        return None
    arguments = value.get(arguments_key, value.get("arguments", value.get("parameters", {})))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    if not isinstance(arguments, dict):
        return None
    return ToolCall(name=value["name"], arguments=json.dumps(arguments, ensure_ascii=False))

"""How a request's tools reach the prompt: through the model's chat template (``tools=``, as
Hugging Face renders them) when the template takes tools, else through the fallback prompt.

The fallback (templates with no tool support, SmolLM2's among them) adds a system message that
lists the tools as JSON and asks for Hermes-style calls, ``<tool_call>{"name": ..., "arguments":
{...}}</tool_call>``; an assistant turn's earlier calls are written back in that form and a
``tool`` message becomes a user turn holding ``<tool_response>...</tool_response>``. The family
of the template (``family_of``) picks the parser (``parse.py``) and, for a forced choice, the
text the assistant's turn is started with (``continuation``): the model then writes the rest of
the call. Until the grammar engine enforces a forced call (``grammar_hook.py``), that start and
the parser are what force it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from mcp.serving.tools.spec import Tool, ToolChoice, template_message

Family = Literal["hermes", "llama3", "mistral", "fallback"]

FALLBACK_SYSTEM = (
    "You may call functions to answer. The functions, as JSON Schema:\n<tools>\n{tools}\n</tools>\n"
    "To call a function, answer with one line per call and nothing else:\n"
    '<tool_call>{{"name": <function name>, "arguments": <arguments as a JSON object>}}</tool_call>')


def family_of(chat_template: str | None) -> Family:
    """The tool-call format a chat template teaches, read from its source."""
    source = chat_template or ""
    if "tools" not in source:
        return "fallback"
    if "<tool_call>" in source:
        return "hermes"  # Hermes, Qwen 2/2.5/3
    if "[TOOL_CALLS]" in source:
        return "mistral"
    if "<|python_tag|>" in source or "<|eom_id|>" in source or "ipython" in source:
        return "llama3"
    return "hermes"  # a template with tools and no known marker: Hermes is the common one


@dataclass(frozen=True)
class ToolPrompt:
    """What the chat template gets: the messages, its keyword arguments, and the text that starts
    the assistant's turn."""

    messages: list[dict[str, Any]]
    template_kwargs: dict[str, Any]
    continuation: str = ""


def tool_prompt(messages: Sequence[Mapping[str, Any]], tools: Sequence[Tool], choice: ToolChoice, family: Family,
                template_kwargs: Mapping[str, Any]) -> ToolPrompt:
    """The conversation as the template renders it, with the tools (none when ``choice`` is none)."""
    offered = [] if choice.mode == "none" else [t for t in tools if choice.name in (None, t.name)]
    kwargs = dict(template_kwargs)
    if family == "fallback":
        rendered = _fallback_messages(messages, offered)
    else:
        rendered = [template_message(m) for m in messages]
        if offered:
            kwargs["tools"] = [t.as_template_tool() for t in offered]
    return ToolPrompt(rendered, kwargs, continuation(family, choice, offered) if offered else "")


def continuation(family: Family, choice: ToolChoice, offered: Sequence[Tool]) -> str:
    """The start of a forced call in the family's format ('' when the call is not forced). With
    one function to call (named, or the only one offered) it goes on to the arguments' first
    required property, so the model writes values; ``required`` with several leaves the name open."""
    if not choice.forced:
        return ""
    tool = offered[0] if len(offered) == 1 else None
    key = "parameters" if family == "llama3" else "arguments"
    named = f'"{tool.name}", "{key}": {_first_property(tool)}' if tool else '"'
    opening = {"llama3": "", "mistral": "[TOOL_CALLS][", "hermes": "<tool_call>\n"}.get(family, "<tool_call>")
    return opening + '{"name": ' + named


def _first_property(tool: Tool) -> str:
    """``{"city": "`` for a tool whose first required property is the string ``city``; ``{`` else."""
    required = tool.parameters.get("required") or []
    properties = tool.parameters.get("properties") or {}
    if not required or not isinstance(required[0], str) or not isinstance(properties.get(required[0]), dict):
        return ""
    name = required[0]
    quote = '"' if properties[name].get("type") == "string" else ""
    return "{" + json.dumps(name, ensure_ascii=False) + ": " + quote


def _fallback_messages(messages: Sequence[Mapping[str, Any]], tools: Sequence[Tool]) -> list[dict[str, Any]]:
    out = [_fallback_message(m) for m in messages]
    if not tools:
        return out
    listed = "\n".join(json.dumps(t.as_template_tool()["function"], ensure_ascii=False) for t in tools)
    system = FALLBACK_SYSTEM.format(tools=listed)
    if out and out[0]["role"] == "system":
        return [{"role": "system", "content": f"{out[0]['content']}\n\n{system}"}, *out[1:]]
    return [{"role": "system", "content": system}, *out]


def _fallback_message(message: Mapping[str, Any]) -> dict[str, Any]:
    role, content = message["role"], message.get("content") or ""
    if role == "tool":
        return {"role": "user", "content": f"<tool_response>\n{content}\n</tool_response>"}
    calls = [_fallback_call(c) for c in message.get("tool_calls") or ()]
    return {"role": role, "content": "\n".join([content, *calls]) if content else "\n".join(calls)}


def _fallback_call(call: Mapping[str, Any]) -> str:
    function = call["function"]
    try:
        arguments = json.loads(function["arguments"])
    except (TypeError, ValueError):
        arguments = function["arguments"]
    return "<tool_call>" + json.dumps({"name": function["name"], "arguments": arguments}, ensure_ascii=False) \
        + "</tool_call>"

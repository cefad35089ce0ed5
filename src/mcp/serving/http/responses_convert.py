"""A ``POST /v1/responses`` body to the one typed request (``ServingRequest``), once.

The Responses API's input becomes the chat conversation the rest of serving already runs:
``instructions`` a system message in front, a text ``input`` one user message, and the items
in order — a ``message`` a turn, a ``function_call`` a call on the assistant's turn (calls in a
row join one turn, as chat's ``tool_calls``), a ``function_call_output`` a ``tool`` message.
From there admission, the SLO class, tenants, rate limits, governance, audit and metrics are
chat's. A bad field is a ``FieldError`` naming it as the body spells it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from mcp.base.errors import InvalidRequestError
from mcp.config.runtime import RuntimeConfig
from mcp.engine.grammar import ResponseFormat, response_format_of
from mcp.serving.errors import FieldError
from mcp.serving.http import responses_fields as published
from mcp.serving.http import responses_schema as r
from mcp.serving.http.convert import check_prompt_size, requested_slo_class
from mcp.serving.request import Prompt, Sampling, ServingRequest, trace_context
from mcp.serving.tools.spec import AUTO, Tool, ToolChoice

ROUTE = "POST /v1/responses"


def request_of(body: r.ResponseCreateRequest, headers: Mapping[str, str], sla_class: str | None,
               config: RuntimeConfig, tenant: str) -> ServingRequest:
    """The body (with the request's headers and ``x-sla-class``) as the request serving runs for ``tenant``."""
    messages = conversation(body)
    check_prompt_size(sum(len(m["content"]) + len(str(m.get("tool_calls") or "")) for m in messages), config,
                       "input")
    tools, choice = _tools(body)
    metadata = body.metadata or {}
    return ServingRequest(
        request_id=f"resp_{uuid.uuid4().hex}", route=ROUTE, chat=True, prompts=(Prompt(messages=messages),),
        sampling=_sampling(body, config), tenant=tenant, slo_class=requested_slo_class(sla_class),
        timeout_s=config.serving.request_timeout_s, user=body.user, model=body.model or None,
        trace_context=trace_context(headers),
        attributes={"gen_ai.request.temperature": body.temperature, "gen_ai.request.top_p": body.top_p,
                    "gen_ai.request.top_k": body.top_k, "gen_ai.request.seed": body.seed,
                    **{f"mcp.request.metadata.{k}": v for k, v in metadata.items()}},
        tools=tools, tool_choice=choice, parallel_tool_calls=body.parallel_tool_calls is not False,
        metadata=metadata, ignored_fields=ignored_fields(body))


def ignored_fields(body: r.ResponseCreateRequest) -> tuple[str, ...]:
    """The published fields the body sent that have no effect here, nested ones by their path."""
    ignored = set(body.model_fields_set & published.IGNORED)
    if body.text is not None and "verbosity" in body.text.model_fields_set:
        ignored.add("text.verbosity")
    for tool in body.tools or ():
        ignored |= {f"tools.{field}" for field in _sent_tool_fields(tool) & published.TOOL_IGNORED}
    return tuple(sorted(ignored))


def _sent_tool_fields(tool: r.FunctionTool) -> set[str]:
    return {r.FunctionTool.model_fields[name].alias or name for name in tool.model_fields_set}


# -- the conversation ----------------------------------------------------------------------------
def conversation(body: r.ResponseCreateRequest) -> list[dict]:
    """The chat messages the body's instructions and input make (system messages in front joined)."""
    messages: list[dict] = [{"role": "system", "content": body.instructions}] if body.instructions else []
    if isinstance(body.input, str):
        messages.append({"role": "user", "content": body.input})
    else:
        for item in body.input:
            _add_item(messages, item)
    return _joined_leading_system(messages)


def _add_item(messages: list[dict], item: r.InputItem) -> None:
    if isinstance(item, r.MessageItem):
        role = "system" if item.role == "developer" else item.role
        messages.append({"role": role, "content": _text(item.content)})
    elif isinstance(item, r.FunctionCallItem):
        call = {"id": item.call_id, "type": "function", "function": {"name": item.name, "arguments": item.arguments}}
        last = messages[-1] if messages else None
        if last is not None and last["role"] == "assistant":
            last.setdefault("tool_calls", []).append(call)
        else:
            messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
    else:
        message = {"role": "tool", "tool_call_id": item.call_id, "content": _text(item.output)}
        if item.name:
            message["name"] = item.name
        messages.append(message)


def _text(content: str | list[r.InputContentPart]) -> str:
    return content if isinstance(content, str) else "".join(part.content for part in content)


def _joined_leading_system(messages: list[dict]) -> list[dict]:
    """``instructions`` and leading system/developer messages as one system message: chat
    templates (and the tool fallback prompt) take one system message, first."""
    count = next((i for i, m in enumerate(messages) if m["role"] != "system"), len(messages))
    if count < 2:
        return messages
    joined = "\n\n".join(m["content"] for m in messages[:count])
    return [{"role": "system", "content": joined}, *messages[count:]]


# -- tools, format, sampling ---------------------------------------------------------------------
def _tools(body: r.ResponseCreateRequest) -> tuple[tuple[Tool, ...], ToolChoice]:
    tools = tuple(Tool(t.name, t.description, t.parameters or {}) for t in body.tools or ())
    names = [t.name for t in tools]
    if len(set(names)) != len(names):
        raise FieldError("tools name the same function twice; give each a distinct name", "tools")
    choice = body.tool_choice
    if isinstance(choice, r.AllowedTools):
        allowed = {t.name for t in choice.tools}
        unknown = sorted(allowed - set(names))
        if unknown:
            raise FieldError(f"tool_choice allows function {unknown[0]!r}, which is not in tools "
                             f"({', '.join(names) or 'none'})", "tool_choice")
        return tuple(t for t in tools if t.name in allowed), ToolChoice(choice.mode)
    if choice is None:
        return tools, AUTO
    if isinstance(choice, str):
        return tools, ToolChoice(choice)  # type: ignore[arg-type]
    return tools, ToolChoice("function", choice.name)


def _sampling(body: r.ResponseCreateRequest, config: RuntimeConfig) -> Sampling:
    limit = config.serving.limits.max_tokens
    max_tokens = body.max_output_tokens
    if max_tokens is not None and max_tokens > limit:
        raise FieldError(f"max_output_tokens is {max_tokens}; this server allows at most {limit}",
                         "max_output_tokens")
    if max_tokens is None:
        max_tokens = min(config.generation.max_tokens, limit)
    return Sampling(max_tokens=max_tokens, temperature=body.temperature, top_p=body.top_p, top_k=body.top_k,
                    min_p=body.min_p, repetition_penalty=body.repetition_penalty, seed=body.seed,
                    response_format=text_format(body))


def text_format(body: r.ResponseCreateRequest) -> ResponseFormat | None:
    """``text.format`` compiled (in chat's ``response_format`` shape); one the grammar engine cannot
    compile is a 400 naming the problem."""
    fmt = body.text.format if body.text is not None else None
    if fmt is None:
        return None
    value = fmt.model_dump(by_alias=True)
    if isinstance(fmt, r.JSONSchemaTextFormat):
        value = {"type": "json_schema", "json_schema": {"name": fmt.name, "schema": fmt.schema_,
                                                        "strict": fmt.strict}}
    try:
        return response_format_of(value)
    except InvalidRequestError as error:
        raise FieldError(str(error).replace("response_format", "text.format"), "text.format") from None

"""Anthropic Messages bodies to the one typed request (``ServingRequest``), once.

The conversation becomes the messages the chat template reads, in the same form the OpenAI
adapter gives (``convert.py``): ``system`` (a string or text blocks) a system message first;
an assistant turn's ``tool_use`` blocks its ``tool_calls`` (the input as JSON text); a user
turn's ``tool_result`` blocks ``tool`` messages (before the turn's own text, which follows the
results). ``tool_choice`` ``auto``/``any``/``tool``/``none`` maps to ``auto``/``required``/a
named function/``none``, ``disable_parallel_tool_use`` to ``parallel_tool_calls: false``, and
``metadata.user_id`` is the request's end user (the audit record keeps its pseudonym). A block
this model cannot read is a 400 naming it. From here on the request runs the path every route
runs: admission, SLO class, tenant limits, governance, audit, metrics.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping

from mcp.base.errors import InvalidRequestError
from mcp.config.runtime import RuntimeConfig
from mcp.engine.grammar import ResponseFormat
from mcp.serving.errors import FieldError
from mcp.serving.http import convert
from mcp.serving.http import messages_schemas as m
from mcp.serving.request import Prompt, Sampling, ServingRequest, trace_context
from mcp.serving.tools.spec import AUTO, Tool, ToolChoice

ROUTE = "POST /v1/messages"
_UNREADABLE = {"image": "this model takes no images", "document": "this model takes no documents",
               "thinking": "this model has no extended thinking", "redacted_thinking":
               "this model has no extended thinking"}


def request_of(body: m.MessagesRequest | m.CountTokensRequest, headers: Mapping[str, str],
               sla_class: str | None, config: RuntimeConfig, tenant: str) -> ServingRequest:
    """The body as the request serving runs for ``tenant`` (a count_tokens body: its prompt only)."""
    messages = conversation(body)
    convert.check_prompt_size(sum(len(x["content"]) + len(str(x.get("tool_calls") or "")) for x in messages),
                               config, "messages")
    full = isinstance(body, m.MessagesRequest)
    sampling = _sampling(body, config) if full else Sampling(max_tokens=1)
    user = body.metadata.user_id if full and body.metadata else None
    ignored = set(body.model_fields_set & m.IGNORED)
    if body.output_config is not None and body.output_config.effort is not None:
        ignored.add("output_config.effort")
    return ServingRequest(
        request_id=f"msg_{uuid.uuid4().hex[:24]}", route=ROUTE, chat=True, prompts=(Prompt(messages=messages),),
        sampling=sampling, tenant=tenant, slo_class=convert.requested_slo_class(sla_class),
        timeout_s=config.serving.request_timeout_s, user=user, model=body.model or None,
        trace_context=trace_context(headers), attributes=_attributes(body) if full else {},
        ignored_fields=tuple(sorted(ignored)), **_tooling(body))


def conversation(body: m.MessagesRequest | m.CountTokensRequest) -> list[dict]:
    """The system text and every turn, as chat-template messages."""
    out: list[dict] = []
    if body.system:
        system = body.system if isinstance(body.system, str) else "\n".join(b.text for b in body.system)
        out.append({"role": "system", "content": system})
    for index, message in enumerate(body.messages):
        out += _turn(index, message)
    if body.messages[-1].role == "assistant":
        last = f"messages[{len(body.messages) - 1}]"
        raise FieldError(f"{last} is an assistant turn: this server does not continue a prefilled answer; "
                         "end with a user turn", last)
    return out


def _turn(index: int, message: m.MessageParam) -> list[dict]:
    if isinstance(message.content, str):
        return [{"role": message.role, "content": message.content}]
    texts, calls, results = [], [], []
    for j, block in enumerate(message.content):
        where = f"messages[{index}].content[{j}]"
        if isinstance(block, m.TextBlock):
            texts.append(block.text)
        elif isinstance(block, m.ToolUseBlock):
            _check_role(message.role, "assistant", block.type, where)
            calls.append({"id": block.id, "type": "function",
                          "function": {"name": block.name, "arguments": json.dumps(block.input, ensure_ascii=False)}})
        elif isinstance(block, m.ToolResultBlock):
            _check_role(message.role, "user", block.type, where)
            results.append({"role": "tool", "tool_call_id": block.tool_use_id, "content": _result_text(block, where)})
        else:
            raise _unreadable(block.type, where)
    if message.role == "assistant":
        turn = {"role": "assistant", "content": "".join(texts)}
        return [{**turn, "tool_calls": calls} if calls else turn]
    return [*results, {"role": "user", "content": "".join(texts)}] if texts or not results else results


def _check_role(role: str, expected: str, kind: str, where: str) -> None:
    if role != expected:
        raise FieldError(f"{where} is a {kind} block in a {role} turn; {kind} blocks belong in {expected} turns",
                         where)


def _result_text(block: m.ToolResultBlock, where: str) -> str:
    if block.content is None or isinstance(block.content, str):
        text = block.content or ""
    else:
        parts = []
        for k, part in enumerate(block.content):
            if not isinstance(part, m.TextBlock):
                raise _unreadable(part.type, f"{where}.content[{k}]")
            parts.append(part.text)
        text = "".join(parts)
    return f"Error: {text}" if block.is_error else text


def _unreadable(kind: str, where: str) -> FieldError:
    reason = _UNREADABLE.get(kind, "this server does not take them")
    article = "an" if kind[0] in "aeiou" else "a"
    return FieldError(f"{where} is {article} {kind} block: {reason}; send text blocks only", where)


def _tooling(body: m.MessagesRequest | m.CountTokensRequest) -> dict:
    tools = tuple(Tool(t.name, t.description, t.input_schema) for t in body.tools or ())
    names = [t.name for t in tools]
    if len(set(names)) != len(names):
        raise FieldError("tools name the same tool twice; give each a distinct name", "tools")
    choice, parallel = _tool_choice(body.tool_choice)
    if body.tool_choice is not None and choice.forced and not tools:
        raise FieldError(f"tool_choice is {body.tool_choice.type!r} but the request has no tools; send tools",
                         "tool_choice")
    return {"tools": tools, "tool_choice": choice, "parallel_tool_calls": parallel}


def _tool_choice(choice: m.ToolChoice | None) -> tuple[ToolChoice, bool]:
    if choice is None:
        return AUTO, True
    parallel = not getattr(choice, "disable_parallel_tool_use", None)
    if isinstance(choice, m.ToolChoiceTool):
        return ToolChoice("function", choice.name), parallel
    mode = {"auto": "auto", "any": "required", "none": "none"}[choice.type]
    return ToolChoice(mode), parallel  # type: ignore[arg-type]


def _sampling(body: m.MessagesRequest, config: RuntimeConfig) -> Sampling:
    limit = config.serving.limits.max_tokens
    if body.max_tokens > limit:
        raise FieldError(f"max_tokens is {body.max_tokens}; this server allows at most {limit}", "max_tokens")
    stop = tuple(body.stop_sequences) if body.stop_sequences else None
    return Sampling(max_tokens=body.max_tokens, temperature=body.temperature, top_p=body.top_p, top_k=body.top_k,
                    stop=stop, response_format=_output_format(body.output_config))


def _output_format(config: m.OutputConfig | None) -> ResponseFormat | None:
    """``output_config.format`` (a JSON Schema) as the grammar the answer is decoded under; one
    the grammar engine cannot compile is a 400 naming the problem."""
    if config is None or config.format is None:
        return None
    try:
        return ResponseFormat.json_schema(config.format.schema_, strict=False)
    except InvalidRequestError as error:
        raise FieldError(str(error).replace("response_format", "output_config.format"),
                         "output_config.format") from None


def _attributes(body: m.MessagesRequest) -> dict:
    return {"gen_ai.request.temperature": body.temperature, "gen_ai.request.top_p": body.top_p,
            "gen_ai.request.top_k": body.top_k, "gen_ai.request.stop_sequences": body.stop_sequences}

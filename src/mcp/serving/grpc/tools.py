"""``mcp.v1`` tool fields to the typed request's tools and back (the HTTP adapter's twin is
``http/convert.py``; both end in ``serving/tools``)."""

from __future__ import annotations

import json

from mcp.serving.errors import FieldError
from mcp.serving.grpc._gen import inference_pb2 as pb
from mcp.serving.tools.parse import ParsedAnswer
from mcp.serving.tools.spec import AUTO, Tool, ToolCall, ToolChoice

_MODES = {pb.ToolChoice.MODE_UNSPECIFIED: "auto", pb.ToolChoice.MODE_AUTO: "auto", pb.ToolChoice.MODE_NONE: "none",
          pb.ToolChoice.MODE_REQUIRED: "required", pb.ToolChoice.MODE_FUNCTION: "function"}


def tooling_of(request: pb.InferRequest) -> dict:
    """``tools``, ``tool_choice`` and ``parallel_tool_calls`` as ``ServingRequest`` takes them."""
    tools = tuple(_tool(tool, i) for i, tool in enumerate(request.tools))
    if len({t.name for t in tools}) != len(tools):
        raise FieldError("tools name the same function twice; give each a distinct name", "tools")
    return {"tools": tools, "tool_choice": _choice(request), "parallel_tool_calls":
            not request.HasField("parallel_tool_calls") or request.parallel_tool_calls}


def message_calls(message: pb.ChatMessage, index: int) -> list[dict]:
    """An assistant turn's calls as the chat template reads them (OpenAI's shape)."""
    calls = []
    for j, call in enumerate(message.tool_calls):
        _json_object(call.arguments_json or "{}", f"chat.messages[{index}].tool_calls[{j}].arguments_json")
        calls.append({"id": call.id or f"call_{index}_{j}", "type": "function",
                      "function": {"name": call.name, "arguments": call.arguments_json or "{}"}})
    return calls


def calls_of(answer: ParsedAnswer) -> list[pb.ToolCall]:
    return [_call(call) for call in answer.tool_calls]


def _call(call: ToolCall) -> pb.ToolCall:
    return pb.ToolCall(id=call.id, name=call.name, arguments_json=call.arguments)


def _tool(tool: pb.Tool, index: int) -> Tool:
    param = f"tools[{index}]"
    schema = _json_object(tool.parameters_json, f"{param}.parameters_json") if tool.parameters_json else {}
    try:
        return Tool(tool.name, tool.description or None, schema)
    except FieldError as error:
        raise FieldError(str(error), f"{param}.name") from None


def _choice(request: pb.InferRequest) -> ToolChoice:
    if not request.HasField("tool_choice"):
        return AUTO
    mode = _MODES.get(request.tool_choice.mode)
    if mode is None:
        raise FieldError(f"tool_choice.mode {request.tool_choice.mode} is not a ToolChoice.Mode", "tool_choice.mode")
    if (mode == "function") != bool(request.tool_choice.function):
        raise FieldError("tool_choice.function names the function exactly when mode is MODE_FUNCTION",
                         "tool_choice.function")
    return ToolChoice(mode, request.tool_choice.function or None)  # type: ignore[arg-type]


def _json_object(text: str, param: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError as error:
        raise FieldError(f"{param} is not JSON ({error}); send a JSON object's text", param) from None
    if not isinstance(value, dict):
        raise FieldError(f"{param} is a JSON {type(value).__name__}; send a JSON object", param)
    return value

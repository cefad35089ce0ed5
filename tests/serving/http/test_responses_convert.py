"""A Responses API body to the typed request, and a forced call's grammar: pure functions, no model.

The conversation a body makes is what the chat template renders, so its shape is asserted
message by message; the tool grammar is asserted by what it compiles to and when it is absent."""

from __future__ import annotations

import json

from mcp.config.runtime import RuntimeConfig
from mcp.serving.http import responses_convert as convert
from mcp.serving.http.responses_schema import ResponseCreateRequest
from mcp.serving.tools.grammar_hook import tool_call_grammar
from mcp.serving.tools.spec import AUTO, Tool, ToolChoice

WEATHER = Tool("get_weather", "the weather", {"type": "object", "properties": {"city": {"type": "string"}},
                                              "required": ["city"]})


def _body(**fields) -> ResponseCreateRequest:
    return ResponseCreateRequest.model_validate_json(json.dumps(fields))


def test_items_become_the_chat_conversation():
    body = _body(instructions="Be brief.", input=[
        {"role": "developer", "content": "Use metric units."},
        {"role": "user", "content": [{"type": "input_text", "text": "Weather in "}, {"type": "input_text", "text": "Oslo?"}]},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Oslo"}'},
        {"type": "function_call", "call_id": "call_2", "name": "get_weather", "arguments": '{"city": "Bergen"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "7 C"},
        {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
         "content": [{"type": "output_text", "text": "It is 7 C.", "annotations": []}]}])
    system, user, calls, tool, answer = convert.conversation(body)
    assert system == {"role": "system", "content": "Be brief.\n\nUse metric units."}
    assert user == {"role": "user", "content": "Weather in Oslo?"}
    assert calls["role"] == "assistant" and [c["id"] for c in calls["tool_calls"]] == ["call_1", "call_2"]
    assert calls["tool_calls"][1]["function"] == {"name": "get_weather", "arguments": '{"city": "Bergen"}'}
    assert tool == {"role": "tool", "tool_call_id": "call_1", "content": "7 C"}
    assert answer == {"role": "assistant", "content": "It is 7 C."}


def test_the_typed_request_carries_tools_format_and_limits():
    body = _body(input="Hi", max_output_tokens=7, temperature=0, metadata={"ticket": "42"},
                 tools=[{"type": "function", "name": "get_weather", "parameters": WEATHER.parameters,
                         "defer_loading": False}],
                 tool_choice={"type": "allowed_tools", "mode": "required",
                              "tools": [{"type": "function", "name": "get_weather"}]},
                 text={"format": {"type": "json_schema", "name": "x", "schema": {"type": "object"}}},
                 include=["message.output_text.logprobs"])
    request = convert.request_of(body, {}, "high", RuntimeConfig(), "acme")
    assert request.request_id.startswith("resp_") and request.route == "POST /v1/responses" and request.chat
    assert request.sampling.max_tokens == 7 and request.sampling.response_format.type == "json_schema"
    assert [t.name for t in request.tools] == ["get_weather"] and request.tool_choice == ToolChoice("required")
    assert request.slo_class.name == "HIGH" and request.tenant == "acme" and request.metadata == {"ticket": "42"}
    assert request.ignored_fields == ("include", "tools.defer_loading")


def test_a_forced_choice_has_a_grammar_per_family_and_auto_none():
    named = tool_call_grammar("fallback", [WEATHER], ToolChoice("function", "get_weather"))
    assert named is not None and named.type == "grammar"
    assert '"<tool_call>"' in named.pattern and '"</tool_call>"' in named.pattern and "get_weather" in named.pattern
    llama = tool_call_grammar("llama3", [WEATHER], ToolChoice("required"))
    assert llama is not None and '"parameters"' in llama.pattern and "<tool_call>" not in llama.pattern
    assert tool_call_grammar("hermes", [WEATHER], AUTO) is None
    assert tool_call_grammar("hermes", [WEATHER], ToolChoice("none")) is None


def test_a_schema_the_engine_cannot_compile_leaves_the_textual_start():
    broken = Tool("f", None, {"type": "object", "properties": {"x": {"$ref": "#/definitions/missing"}}})
    assert tool_call_grammar("fallback", [broken], ToolChoice("required")) is None


def test_the_accepted_fields_are_the_published_list_and_our_extensions():
    from openai.types.responses.response_create_params import ResponseCreateParamsBase

    from mcp.serving.http import responses_fields as published

    accepted = {field.alias or name for name, field in ResponseCreateRequest.model_fields.items()}
    assert accepted == published.FIELDS | published.EXTENSIONS
    assert published.FIELDS <= set(ResponseCreateParamsBase.__annotations__) | {"stream"}
    assert published.IGNORED | published.STATEFUL <= published.FIELDS


def test_a_forced_calls_arguments_take_only_the_declared_keys_unless_the_schema_says():
    from mcp.serving.tools.grammar_hook import closed

    nested = {"type": "object", "properties": {
        "where": {"type": "object", "properties": {"city": {"type": "string"}}},
        "tags": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
        "extra": {"type": "object", "properties": {}, "additionalProperties": {"type": "integer"}},
        "free": {"type": "object"}}}
    out = closed(nested)
    assert out["additionalProperties"] is False
    assert out["properties"]["where"]["additionalProperties"] is False
    assert out["properties"]["tags"]["items"]["additionalProperties"] is False
    assert out["properties"]["extra"]["additionalProperties"] == {"type": "integer"}  # said: kept
    assert "additionalProperties" not in out["properties"]["free"]  # no properties listed: any object
    assert "additionalProperties" not in nested  # the tool's own schema is not changed

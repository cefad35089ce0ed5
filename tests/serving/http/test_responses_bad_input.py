"""Bad input to ``POST /v1/responses``: each is a 400 in OpenAI's error format that names the field
and says what was wrong, and the server goes on serving (the last request is answered)."""

from __future__ import annotations

import httpx
import pytest

pytestmark = pytest.mark.slow
TOOL = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
OK = {"model": "smollm2", "input": "Hi", "max_output_tokens": 2}


@pytest.mark.parametrize("extra, param, words", [
    ({"store": True}, "store", "stateless"),
    ({"previous_response_id": "resp_123"}, "previous_response_id", "send the whole conversation"),
    ({"conversation": "conv_1"}, "conversation", "stateless"),
    ({"background": True}, "background", "stateless"),
    ({"max_output_token": 5}, "max_output_token", "unknown field"),
    ({"max_output_tokens": 10 ** 6}, "max_output_tokens", "at most"),
    ({"temperature": 3}, "temperature", "less than or equal to 2"),
    ({"tools": [{"type": "web_search"}]}, "tools", "function tools only"),
    ({"tools": [TOOL, TOOL]}, "tools", "same function twice"),
    ({"tools": [TOOL], "tool_choice": {"type": "function", "name": "nope"}}, "tool_choice", "not in tools"),
    ({"tool_choice": "required"}, "tool_choice", "no tools"),
    ({"tools": [TOOL], "tool_choice": {"type": "allowed_tools", "mode": "auto",
                                       "tools": [{"type": "function", "name": "nope"}]}}, "tool_choice", "not in tools"),
    ({"text": {"format": {"type": "json_schema", "name": "x", "schema": {"type": "object", "properties": 5}}}},
     "text.format", "text.format"),
    ({"text": {"format": {"type": "xml"}}}, "text.format", "xml"),
    ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input", "keeps no items"),
    ({"input": [{"type": "web_search_call", "id": "ws_1"}]}, "input", "takes message, function_call"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "http://x/y.png"}]}]},
     "input.0.message.content.0", "takes no images"),
    ({"input": [{"type": "function_call_output", "output": "21 C"}]}, "input.0.function_call_output.call_id",
     "Field required"),
    ({"input": [{"role": "robot", "content": "hi"}]}, "input.0.message.role", "'user'"),
    ({"input": []}, "input", "at least 1"),
    ({"input": "x" * 60_000}, None, "shorten the prompt"),
])
def test_bad_field_is_a_400_naming_it(smollm2_server, extra, param, words):
    reply = httpx.post(smollm2_server.url + "/v1/responses", json={**OK, **extra}, timeout=60)
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == param
    assert words in error["message"], error["message"]


def test_not_json_and_not_an_object(smollm2_server):
    url = smollm2_server.url + "/v1/responses"
    bad = httpx.post(url, content=b"{", headers={"content-type": "application/json"}, timeout=60)
    assert bad.status_code == 400 and "not valid JSON" in bad.json()["error"]["message"]
    missing = httpx.post(url, json={"model": "smollm2"}, timeout=60)
    assert missing.status_code == 400 and missing.json()["error"]["param"] == "input"


def test_a_bad_slo_class_header_is_named(smollm2_server):
    reply = httpx.post(smollm2_server.url + "/v1/responses", json=OK, headers={"x-sla-class": "urgent"}, timeout=60)
    assert reply.status_code == 400 and reply.json()["error"]["param"] == "x-sla-class"


def test_still_serving_after_bad_input(smollm2_server):
    reply = httpx.post(smollm2_server.url + "/v1/responses", json=OK, timeout=60)
    assert reply.status_code == 200 and reply.json()["output"][0]["content"][0]["text"]

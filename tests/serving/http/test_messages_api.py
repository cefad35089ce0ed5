"""Anthropic's Messages API end to end: a real ``mcp2026 serve`` with the real default model,
called by the real ``anthropic`` library (and raw HTTP for the bytes on the wire).

The 135M model does not choose to call tools by itself, so calls are forced (``tool_choice``
``tool`` or ``any``): the grammar built from the tools' schemas makes the call parse and its
input validate. Greedy decoding (temperature 0) keeps every assertion deterministic."""

from __future__ import annotations

import json

import anthropic
import httpx
import jsonschema
import pytest

pytestmark = pytest.mark.slow
WEATHER = {"name": "get_weather", "description": "The current weather in a city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
# enums and bounded integers: what a small model gets wrong unless the grammar holds it
THERMOSTAT = {"name": "set_thermostat", "description": "Set the heating",
              "input_schema": {"type": "object", "required": ["celsius", "mode"], "properties": {
                  "celsius": {"type": "integer", "minimum": 5, "maximum": 30},
                  "mode": {"type": "string", "enum": ["heat", "cool", "off"]}}}}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
FORCED = {"type": "tool", "name": "get_weather"}
# anthropic-python 2.x has no sampling arguments: greedy decoding goes as an extra body field
GREEDY = {"extra_body": {"temperature": 0}}


@pytest.fixture(scope="module")
def client(smollm2_server):
    return anthropic.Anthropic(base_url=smollm2_server.url, api_key="unused", max_retries=0)


def test_forced_tool_use_and_a_tool_round_trip(client):
    first = client.messages.create(model="smollm2", max_tokens=40, messages=ASK, tools=[WEATHER], tool_choice=FORCED,
                                   **GREEDY)
    assert first.type == "message" and first.role == "assistant" and first.stop_reason == "tool_use"
    (call,) = first.content
    assert call.type == "tool_use" and call.name == "get_weather" and call.id.startswith("toolu_")
    assert "paris" in call.input["city"].lower()
    result = {"type": "tool_result", "tool_use_id": call.id, "content": "21 C and clear"}
    turns = [*ASK, {"role": "assistant", "content": first.content}, {"role": "user", "content": [result]}]
    second = client.messages.create(model="smollm2", max_tokens=16, messages=turns, tools=[WEATHER], **GREEDY)
    assert second.content[0].type == "text" and second.content[0].text
    assert second.stop_reason in ("end_turn", "max_tokens")
    # the call and the tool's answer are in the prompt: it grew by at least their tokens
    assert second.usage.input_tokens >= first.usage.input_tokens + 15


def test_any_choice_is_held_to_the_schema_by_the_grammar(client):
    reply = client.messages.create(model="smollm2", max_tokens=48, **GREEDY, tools=[WEATHER, THERMOSTAT],
                                   tool_choice={"type": "any"},
                                   messages=[{"role": "user", "content": "Make it warmer, 22 degrees please."}])
    (call,) = [block for block in reply.content if block.type == "tool_use"]
    schema = {t["name"]: t["input_schema"] for t in (WEATHER, THERMOSTAT)}[call.name]
    jsonschema.validate(call.input, schema)
    assert reply.stop_reason == "tool_use"


def test_streamed_text_has_anthropics_events_and_the_whole_answers_text(client, smollm2_server):
    whole = client.messages.create(model="smollm2", max_tokens=12, messages=ASK, **GREEDY)
    with client.messages.stream(model="smollm2", max_tokens=12, messages=ASK, **GREEDY) as stream:
        events = list(stream)
        final = stream.get_final_message()
    kinds = [e.type for e in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert kinds[1] == "content_block_start" and kinds[-3] == "content_block_stop"
    deltas = [e.delta.text for e in events if e.type == "content_block_delta"]
    assert "".join(deltas) == whole.content[0].text == final.content[0].text
    assert final.stop_reason == whole.stop_reason and final.usage.output_tokens == whole.usage.output_tokens
    assert events[0].message.usage.input_tokens == whole.usage.input_tokens
    # on the wire: each event named by `event:`, a ping after message_start
    body = {"model": "smollm2", "max_tokens": 4, "messages": ASK, "stream": True}
    with httpx.stream("POST", smollm2_server.url + "/v1/messages", json=body, timeout=60) as streamed:
        names = [line[7:] for line in streamed.iter_lines() if line.startswith("event: ")]
    assert names[:3] == ["message_start", "ping", "content_block_start"] and names[-1] == "message_stop"


def test_streamed_tool_use_comes_as_input_json_deltas(client):
    whole = client.messages.create(model="smollm2", max_tokens=40, messages=ASK, tools=[WEATHER], tool_choice=FORCED,
                                   **GREEDY)
    with client.messages.stream(model="smollm2", max_tokens=40, messages=ASK, tools=[WEATHER], tool_choice=FORCED,
                                **GREEDY) as stream:
        events = list(stream)
        final = stream.get_final_message()
    starts = [e.content_block for e in events if e.type == "content_block_start"]
    assert [b.type for b in starts] == ["tool_use"] and starts[0].name == "get_weather"
    partial = "".join(e.delta.partial_json for e in events if e.type == "content_block_delta")
    assert json.loads(partial) == whole.content[0].input == final.content[0].input
    assert final.stop_reason == "tool_use"


def test_stop_sequences_and_max_tokens_name_the_reason(client):
    free = client.messages.create(model="smollm2", max_tokens=16, messages=ASK, **GREEDY)
    assert free.stop_reason == "max_tokens" or free.stop_reason == "end_turn"
    words = free.content[0].text.split()
    assert len(words) >= 3
    stop = " " + words[2]
    cut = client.messages.create(model="smollm2", max_tokens=16, messages=ASK, **GREEDY, stop_sequences=[stop])
    assert cut.stop_reason == "stop_sequence" and cut.stop_sequence == stop
    assert cut.content[0].text == free.content[0].text[:free.content[0].text.index(stop)]
    short = client.messages.create(model="smollm2", max_tokens=2, messages=ASK, **GREEDY)
    assert short.stop_reason == "max_tokens" and short.usage.output_tokens == 2


def test_output_config_format_returns_json_of_the_schema(client):
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "country": {"type": "string"}},
              "required": ["city", "country"], "additionalProperties": False}
    reply = client.messages.create(model="smollm2", max_tokens=40, messages=[
        {"role": "user", "content": "Paris is the capital of France. Give the city and its country as JSON."}],
        output_config={"format": {"type": "json_schema", "schema": schema}, "effort": "low"}, **GREEDY)
    parsed = json.loads(reply.content[0].text)
    jsonschema.validate(parsed, schema)
    assert parsed["city"].strip() and reply.stop_reason == "end_turn"


def test_count_tokens_is_the_prompt_messages_runs(client):
    system = "You answer in one word."
    counted = client.messages.count_tokens(model="smollm2", messages=ASK, system=system, tools=[WEATHER])
    ran = client.messages.create(model="smollm2", max_tokens=2, messages=ASK, system=system, tools=[WEATHER])
    assert counted.input_tokens == ran.usage.input_tokens > 30
    plain = client.messages.count_tokens(model="smollm2", messages=ASK, system=[{"type": "text", "text": system}])
    assert plain.input_tokens < counted.input_tokens  # the tools' prompt counts


@pytest.mark.parametrize("body,words", [
    ({"messages": ASK}, "max_tokens"),  # required
    ({"max_tokens": 4, "messages": ASK, "max_tokenz": 1}, "unknown field 'max_tokenz'"),
    ({"max_tokens": 4, "messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}]}]},
     "messages[0].content[0] is an image block: this model takes no images"),
    ({"max_tokens": 4, "messages": [{"role": "user", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}]}]}, "belong in assistant turns"),
    ({"max_tokens": 4, "messages": ASK, "tool_choice": {"type": "any"}}, "no tools"),
    ({"max_tokens": 4, "messages": ASK, "tools": [WEATHER], "tool_choice": {"type": "tool", "name": "nope"}},
     "not in tools"),
    ({"max_tokens": 4, "messages": ASK, "temperature": 1.5}, "temperature"),
    ({"max_tokens": 4, "messages": ASK, "model": "nope"}, "nope"),
    ({"max_tokens": 4, "messages": [*ASK, {"role": "assistant", "content": "The weather is"}]},
     "messages[1] is an assistant turn: this server does not continue a prefilled answer"),
    ({"max_tokens": 4, "messages": ASK, "output_config": {"format": {"type": "json_schema", "schema": {"type": 5}}}},
     "output_config.format"),
])
def test_bad_requests_get_anthropics_error_shape(smollm2_server, body, words):
    reply = httpx.post(smollm2_server.url + "/v1/messages", json={"model": "smollm2", **body}, timeout=60)
    assert reply.status_code in (400, 404), reply.text
    error = reply.json()
    assert error["type"] == "error" and words in error["error"]["message"]
    assert error["error"]["type"] == ("not_found_error" if reply.status_code == 404 else "invalid_request_error")


def test_the_anthropic_client_raises_its_own_errors(client):
    with pytest.raises(anthropic.BadRequestError) as refused:
        client.messages.create(model="smollm2", max_tokens=4, messages=[
            {"role": "user", "content": [{"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                                                         "data": "x"}}]}])
    assert refused.value.body["error"]["type"] == "invalid_request_error"
    assert "this model takes no documents" in refused.value.body["error"]["message"]
    assert client.messages.create(model="smollm2", max_tokens=2, messages=ASK).content  # still serving


def test_ignored_fields_are_named_in_a_header(smollm2_server):
    body = {"model": "smollm2", "max_tokens": 2, "messages": ASK, "service_tier": "auto", "speed": "fast",
            "thinking": {"type": "disabled"}, "metadata": {"user_id": "u-1"}, "output_config": {"effort": "low"}}
    reply = httpx.post(smollm2_server.url + "/v1/messages", json=body, timeout=60)
    assert reply.status_code == 200, reply.text
    assert reply.headers["x-mcp-ignored-fields"] == "output_config.effort, service_tier, speed, thinking"

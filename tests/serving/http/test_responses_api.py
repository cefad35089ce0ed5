"""``POST /v1/responses`` end to end: a real ``mcp2026 serve`` with the real default model, called
by the official ``openai`` client's ``responses`` API (and by httpx for the bytes on the wire).

Greedy decoding (temperature 0) makes an answer a function of its prompt, so a response must say
exactly what chat completions says for the same conversation. Tool calls are forced
(``tool_choice`` named or ``required``) and structured output is grammar-enforced, because the
135M model would not choose either by itself."""

from __future__ import annotations

import json

import httpx
import pytest
from pydantic import BaseModel

pytestmark = pytest.mark.slow
WEATHER = {"type": "function", "name": "get_weather", "description": "The current weather in a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
ASK = "What is the weather in Paris?"
FORCED = {"type": "function", "name": "get_weather"}
PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}


class Person(BaseModel):
    name: str
    age: int


def test_plain_response_says_what_chat_says(smollm2_openai):
    reply = smollm2_openai.responses.create(model="smollm2", instructions="Answer briefly.", input="Say hello.",
                                            max_output_tokens=8, temperature=0)
    chat = smollm2_openai.chat.completions.create(
        model="smollm2", max_tokens=8, temperature=0,
        messages=[{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Say hello."}])
    assert reply.id.startswith("resp_") and reply.object == "response"
    (message,) = reply.output
    assert message.type == "message" and message.role == "assistant" and message.content[0].type == "output_text"
    assert reply.output_text == chat.choices[0].message.content and reply.output_text
    assert reply.usage.input_tokens == chat.usage.prompt_tokens
    assert reply.usage.output_tokens == chat.usage.completion_tokens
    if chat.choices[0].finish_reason == "length":
        assert reply.status == "incomplete" and reply.incomplete_details.reason == "max_output_tokens"
    else:
        assert reply.status == "completed" and reply.incomplete_details is None
    assert reply.instructions == "Answer briefly." and reply.max_output_tokens == 8


def test_streamed_events_in_order_and_the_same_text(smollm2_openai):
    whole = smollm2_openai.responses.create(model="smollm2", input="Say hello.", max_output_tokens=8, temperature=0)
    events = list(smollm2_openai.responses.create(model="smollm2", input="Say hello.", max_output_tokens=8,
                                                  temperature=0, stream=True))
    kinds = [e.type for e in events]
    deltas = kinds.count("response.output_text.delta")
    assert deltas >= 1
    last = "response.incomplete" if whole.status == "incomplete" else "response.completed"
    assert kinds == ["response.created", "response.in_progress", "response.output_item.added",
                     "response.content_part.added", *["response.output_text.delta"] * deltas,
                     "response.output_text.done", "response.content_part.done", "response.output_item.done", last]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == whole.output_text
    assert events[-4].text == text and events[-2].item.content[0].text == text
    assert events[0].response.status == "in_progress" and events[0].response.output == []
    assert events[-1].response.output_text == text
    assert events[-1].response.usage.output_tokens == whole.usage.output_tokens


def test_function_tool_round_trip(smollm2_openai):
    first = smollm2_openai.responses.create(model="smollm2", input=ASK, tools=[WEATHER], tool_choice=FORCED,
                                            max_output_tokens=24, temperature=0)
    (call,) = first.output
    assert call.type == "function_call" and call.name == "get_weather" and call.call_id.startswith("call_")
    assert "paris" in json.loads(call.arguments)["city"].lower()
    assert first.status == "completed"
    turn = [{"role": "user", "content": ASK}, call,
            {"type": "function_call_output", "call_id": call.call_id, "output": "sunny, 21 degrees"}]
    second = smollm2_openai.responses.create(model="smollm2", input=turn, tools=[WEATHER], max_output_tokens=16,
                                             temperature=0)
    assert second.output[0].type == "message" and second.output_text
    # the call and the tool's answer are in the prompt: it grew by at least their tokens
    assert second.usage.input_tokens >= first.usage.input_tokens + 10


def test_required_tool_call_streams_as_a_function_call_item(smollm2_openai):
    whole = smollm2_openai.responses.create(model="smollm2", input=ASK, tools=[WEATHER], tool_choice="required",
                                            max_output_tokens=24, temperature=0)
    events = list(smollm2_openai.responses.create(model="smollm2", input=ASK, tools=[WEATHER],
                                                  tool_choice="required", max_output_tokens=24, temperature=0,
                                                  stream=True))
    assert [e.type for e in events] == [
        "response.created", "response.in_progress", "response.output_item.added",
        "response.function_call_arguments.delta", "response.function_call_arguments.done",
        "response.output_item.done", "response.completed"]
    added, delta, done, item_done = events[2:6]
    assert added.item.type == "function_call" and added.item.name == "get_weather" and added.item.arguments == ""
    assert delta.delta == done.arguments == whole.output[0].arguments == item_done.item.arguments
    assert delta.item_id == done.item_id == added.item.id == item_done.item.id
    assert events[-1].response.output[0].call_id == item_done.item.call_id


def test_text_format_json_schema_is_enforced(smollm2_openai):
    reply = smollm2_openai.responses.create(
        model="smollm2", input="Describe a person.", max_output_tokens=40, temperature=0,
        text={"format": {"type": "json_schema", "name": "person", "schema": PERSON, "strict": True}})
    person = json.loads(reply.output_text)
    assert set(person) == {"name", "age"} and isinstance(person["age"], int)
    parsed = smollm2_openai.responses.parse(model="smollm2", input="Describe a person.", text_format=Person,
                                            max_output_tokens=40, temperature=0)
    assert isinstance(parsed.output_parsed, Person) and parsed.output_parsed.name
    obj = smollm2_openai.responses.create(model="smollm2", input="Give a JSON object.", max_output_tokens=24,
                                          temperature=0, text={"format": {"type": "json_object"}})
    if obj.status == "completed":
        assert isinstance(json.loads(obj.output_text), dict)


def test_ignored_fields_are_named_and_metadata_echoed(smollm2_server):
    body = {"model": "smollm2", "input": "Hi", "max_output_tokens": 2, "include": [], "reasoning": {"effort": "low"},
            "truncation": "auto", "store": False, "metadata": {"ticket": "42"},
            "text": {"verbosity": "low"}}
    reply = httpx.post(smollm2_server.url + "/v1/responses", json=body, timeout=60)
    assert reply.status_code == 200, reply.text
    assert reply.headers["x-mcp-ignored-fields"] == "include, reasoning, text.verbosity, truncation"
    assert reply.json()["metadata"] == {"ticket": "42"} and reply.json()["store"] is False


def test_stream_is_server_sent_events_with_event_names(smollm2_server):
    body = {"model": "smollm2", "input": "Hi", "max_output_tokens": 2, "stream": True}
    with httpx.stream("POST", smollm2_server.url + "/v1/responses", json=body, timeout=60) as reply:
        assert reply.headers["content-type"].startswith("text/event-stream")
        blocks = "".join(reply.iter_text()).strip().split("\n\n")
    for block in blocks:
        event, data = block.split("\n")
        assert event.startswith("event: ") and data.startswith("data: ")
        assert json.loads(data.removeprefix("data: "))["type"] == event.removeprefix("event: ")

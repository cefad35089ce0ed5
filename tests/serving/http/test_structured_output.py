"""Structured output through the OpenAI-compatible API: a real ``mcp2026 serve`` with the default
model, called with the official ``openai`` client (``.parse()`` with a pydantic model,
``json_object``, our regex and grammar extensions), langchain-openai's ``with_structured_output``
and litellm, and raw httpx for the refusals."""

from __future__ import annotations

import json
import re

import httpx
import pytest
from pydantic import BaseModel, Field

pytestmark = pytest.mark.slow
GREEDY = {"temperature": 0.0}


class Person(BaseModel):
    name: str = Field(max_length=24)
    age: int


def test_parse_with_a_pydantic_model_returns_the_parsed_object(smollm2_openai):
    reply = smollm2_openai.chat.completions.parse(
        model="smollm2", messages=[{"role": "user", "content": "Give me a person as JSON with name and age."}],
        response_format=Person, max_tokens=60, **GREEDY)
    person = reply.choices[0].message.parsed
    assert isinstance(person, Person) and person.name and len(person.name) <= 24
    assert reply.choices[0].finish_reason == "stop"
    assert Person.model_validate_json(reply.choices[0].message.content) == person


def test_json_object_returns_a_json_object_and_text_is_free(smollm2_openai):
    messages = [{"role": "user", "content": "Describe a cat as a JSON object."}]
    reply = smollm2_openai.chat.completions.create(model="smollm2", messages=messages, max_tokens=120,
                                           response_format={"type": "json_object"}, **GREEDY)
    assert isinstance(json.loads(reply.choices[0].message.content), dict)
    free = smollm2_openai.chat.completions.create(model="smollm2", messages=messages, max_tokens=12, **GREEDY)
    text = smollm2_openai.chat.completions.create(model="smollm2", messages=messages, max_tokens=12,
                                          response_format={"type": "text"}, **GREEDY)
    assert text.choices[0].message.content == free.choices[0].message.content


def test_regex_and_grammar_extensions_streamed_and_on_completions(smollm2_openai):
    chunks = smollm2_openai.chat.completions.create(
        model="smollm2", messages=[{"role": "user", "content": "What is your phone number?"}], max_tokens=20,
        stream=True, extra_body={"response_format": {"type": "regex", "regex": r"[0-9]{3}-[0-9]{4}"}}, **GREEDY)
    assert re.fullmatch(r"[0-9]{3}-[0-9]{4}", "".join(c.choices[0].delta.content or "" for c in chunks if c.choices))
    reply = smollm2_openai.completions.create(
        model="smollm2", prompt="Is the sky blue? Answer:", max_tokens=8,
        extra_body={"response_format": {"type": "grammar", "grammar": 'start: " " ("yes" | "no")'}}, **GREEDY)
    assert reply.choices[0].text in (" yes", " no") and reply.choices[0].finish_reason == "stop"


@pytest.mark.parametrize(("response_format", "reason"), [
    ({"type": "json_schema", "json_schema": {"name": "p", "schema": {"$ref": "#/definitions/missing"}}},
     "/definitions/missing"),
    ({"type": "json_schema", "json_schema": {"name": "p", "strict": True,
                                             "schema": {"type": "array", "uniqueItems": True}}}, "uniqueItems"),
    ({"type": "regex", "regex": "(unclosed"}, "cannot be compiled"),
    ({"type": "grammar", "grammar": "start: nowhere"}, "nowhere"),
    ({"type": "xml"}, "response_format"),
])
def test_a_format_the_engine_cannot_compile_is_a_400_with_its_reason(smollm2_server, response_format, reason):
    body = {"model": "smollm2", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4,
            "response_format": response_format}
    reply = httpx.post(smollm2_server.url + "/v1/chat/completions", json=body, timeout=60)
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert reason in error["message"] and error["param"].startswith("response_format")


class City(BaseModel):
    """A city and its country."""

    city: str = Field(max_length=24)
    country: str = Field(max_length=24)


ASK_CITY = "Name a city in France and its country."


@pytest.mark.parametrize("method", ["json_schema", "function_calling", "json_mode"])
def test_langchain_with_structured_output_in_each_method(smollm2_server, method):
    """langchain-openai's three ways: response_format json_schema (its default), a forced tool
    call, and json_object (the schema then only in the prompt: the grammar keeps it JSON)."""
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(base_url=smollm2_server.url + "/v1", api_key="unused", model="smollm2", temperature=0,
                     max_tokens=80, max_retries=0)
    prompt = ASK_CITY if method != "json_mode" else ASK_CITY + ' Answer as JSON: {"city": ..., "country": ...}'
    answer = llm.with_structured_output(City if method != "json_mode" else City.model_json_schema(),
                                        method=method, include_raw=True).invoke(prompt)
    assert answer["parsing_error"] is None
    parsed = answer["parsed"]
    if method == "json_mode":  # a dict: json_object holds the JSON, not the keys
        assert isinstance(parsed, dict)
    else:
        assert isinstance(parsed, City) and parsed.city and parsed.country


def test_litellm_json_schema_and_json_object(smollm2_server, monkeypatch):
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # its price list from the package, not fetched
    import litellm

    common = {"model": "openai/smollm2", "api_base": smollm2_server.url + "/v1", "api_key": "unused",
              "max_tokens": 80, "temperature": 0}
    schema = {"type": "json_schema", "json_schema": {"name": "City", "schema": City.model_json_schema(), "strict": True}}
    reply = litellm.completion(messages=[{"role": "user", "content": ASK_CITY}], response_format=schema, **common)
    city = City.model_validate_json(reply.choices[0].message.content)
    assert city.city and city.country
    reply = litellm.completion(messages=[{"role": "user", "content": "Describe a cat as a JSON object."}],
                               response_format={"type": "json_object"}, **{**common, "max_tokens": 120})
    assert isinstance(json.loads(reply.choices[0].message.content), dict)

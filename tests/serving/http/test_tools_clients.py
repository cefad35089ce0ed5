"""Tool calling and OpenAI's published fields end to end: a real ``mcp2026 serve`` with the real
default model, called by the real client libraries (openai, langchain-openai, litellm).

The 135M model does not choose to call tools by itself, so calls are forced (``tool_choice``
named or ``required``): the server starts the call and parses what the model writes. The round
trips check that the server takes the assistant's calls (``content: null``) and the tool's
answer and renders them (the prompt grows by them)."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

pytestmark = pytest.mark.slow
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
FORCED = {"type": "function", "function": {"name": "get_weather"}}


def _city(arguments: str) -> str:
    city = json.loads(arguments)["city"]
    assert isinstance(city, str) and city.strip()
    return city


def test_openai_forced_tool_call(smollm2_openai):
    reply = smollm2_openai.chat.completions.create(model="smollm2", messages=ASK, tools=[WEATHER], tool_choice=FORCED,
                                           max_tokens=24, temperature=0)
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    (call,) = choice.message.tool_calls
    assert call.type == "function" and call.function.name == "get_weather" and call.id.startswith("call_")
    assert "paris" in _city(call.function.arguments).lower()


def test_openai_required_and_none(smollm2_openai):
    required = smollm2_openai.chat.completions.create(model="smollm2", messages=ASK, tools=[WEATHER], tool_choice="required",
                                              max_tokens=24, temperature=0)
    assert required.choices[0].message.tool_calls[0].function.name == "get_weather"
    none = smollm2_openai.chat.completions.create(model="smollm2", messages=ASK, tools=[WEATHER], tool_choice="none",
                                          max_tokens=8, temperature=0)
    assert none.choices[0].message.tool_calls is None and none.choices[0].finish_reason in ("stop", "length")


def test_openai_streamed_tool_deltas_match_the_whole_answer(smollm2_openai):
    whole = smollm2_openai.chat.completions.create(model="smollm2", messages=ASK, tools=[WEATHER], tool_choice=FORCED,
                                           max_tokens=24, temperature=0)
    chunks = list(smollm2_openai.chat.completions.create(model="smollm2", messages=ASK, tools=[WEATHER], tool_choice=FORCED,
                                                 max_tokens=24, temperature=0, stream=True))
    deltas = [d for c in chunks for d in (c.choices[0].delta.tool_calls or [])]
    assert deltas[0].index == 0 and deltas[0].id.startswith("call_") and deltas[0].function.name == "get_weather"
    arguments = "".join(d.function.arguments or "" for d in deltas)
    assert arguments == whole.choices[0].message.tool_calls[0].function.arguments
    assert [c.choices[0].finish_reason for c in chunks if c.choices[0].finish_reason] == ["tool_calls"]
    assert not "".join(c.choices[0].delta.content or "" for c in chunks)


def test_openai_tool_round_trip_is_rendered(smollm2_openai):
    first = smollm2_openai.chat.completions.create(model="smollm2", messages=ASK, tools=[WEATHER], tool_choice=FORCED,
                                           max_tokens=24, temperature=0)
    call = first.choices[0].message.tool_calls[0]
    result = '{"city": "Paris", "temperature_c": 21, "sky": "clear"}'
    turn = [*ASK, {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
            {"role": "tool", "tool_call_id": call.id, "content": result}]
    second = smollm2_openai.chat.completions.create(model="smollm2", messages=turn, tools=[WEATHER], max_tokens=16,
                                            temperature=0)
    assert second.choices[0].message.content and second.choices[0].finish_reason in ("stop", "length")
    # the call and the tool's answer are in the prompt: it grew by at least their tokens
    assert second.usage.prompt_tokens >= first.usage.prompt_tokens + 20


def test_legacy_functions_answer_with_function_call(smollm2_server):
    body = {"model": "smollm2", "messages": ASK, "functions": [WEATHER["function"]],
            "function_call": {"name": "get_weather"}, "max_tokens": 24, "temperature": 0}
    reply = httpx.post(smollm2_server.url + "/v1/chat/completions", json=body, timeout=60)
    assert reply.status_code == 200, reply.text
    choice = reply.json()["choices"][0]
    assert choice["finish_reason"] == "function_call" and choice["message"]["function_call"]["name"] == "get_weather"
    streaming = {**body, "stream": True}
    with httpx.stream("POST", smollm2_server.url + "/v1/chat/completions", json=streaming, timeout=60) as streamed:
        events = [json.loads(line[6:]) for line in streamed.iter_lines() if line.startswith("data: {")]
    deltas = [e["choices"][0]["delta"] for e in events]
    called = [d["function_call"] for d in deltas if d.get("function_call")]
    assert called == [choice["message"]["function_call"]]
    assert [e["choices"][0]["finish_reason"] for e in events if e["choices"][0]["finish_reason"]] == ["function_call"]


def test_ignored_fields_are_named_in_a_header(smollm2_openai, smollm2_server):
    raw = smollm2_openai.chat.completions.with_raw_response.create(
        model="smollm2", messages=[{"role": "user", "content": [{"type": "text", "text": "Hi",
                                                                 "cache_control": {"type": "ephemeral"}}]}],
        max_completion_tokens=4, store=False, service_tier="auto", reasoning_effort="low", metadata={"app": "t"},
        prompt_cache_key="k", safety_identifier="s", verbosity="low", modalities=["text"], logit_bias={"1": 5},
        user="u1", seed=3, n=2, temperature=0)
    assert raw.headers["x-mcp-ignored-fields"] == ("modalities, prompt_cache_key, reasoning_effort, "
                                                   "safety_identifier, service_tier, store, verbosity")
    reply = raw.parse()
    assert len(reply.choices) == 2 and reply.usage.completion_tokens <= 8
    completion = httpx.post(smollm2_server.url + "/v1/completions", timeout=60, json={
        "model": "smollm2", "prompt": "One, two,", "max_tokens": 3, "suffix": "!", "best_of": 1, "echo": False})
    assert completion.status_code == 200 and completion.headers["x-mcp-ignored-fields"] == "best_of, suffix"
    plain = httpx.post(smollm2_server.url + "/v1/completions", timeout=60, json={"prompt": "One,", "max_tokens": 2})
    assert "x-mcp-ignored-fields" not in plain.headers


def test_assistant_refusal_null_and_developer_accepted(smollm2_server):
    body = {"messages": [{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                         {"role": "assistant", "content": "Hello", "refusal": None},
                         {"role": "user", "content": "Bye"}], "max_tokens": 3}
    assert httpx.post(smollm2_server.url + "/v1/chat/completions", json=body, timeout=60).status_code == 200


@pytest.mark.parametrize("body,param,words", [
    ({"messages": ASK, "stor": True}, "stor", "unknown field"),  # a typo is no published field
    ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x/a.png"}}]}]},
     "messages[0].content[0]", "this model takes no images"),
    ({"messages": [{"role": "user", "content": [{"type": "input_audio",
                                                  "input_audio": {"data": "", "format": "wav"}}]}]},
     "messages[0].content[0]", "this model takes no audio"),
    ({"messages": ASK, "tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "nope"}}},
     "tool_choice", "not in tools"),
    ({"messages": ASK, "tool_choice": "required"}, "tool_choice", "no tools"),
    ({"messages": [{"role": "user", "content": None}]}, "messages[0].content", "only an assistant turn"),
    ({"messages": ASK, "chat_template_kwargs": {"messages": []}}, "chat_template_kwargs", "the server sets"),
])
def test_bad_tool_and_part_requests_are_400s_naming_the_field(smollm2_server, body, param, words):
    reply = httpx.post(smollm2_server.url + "/v1/chat/completions", json={"max_tokens": 2, **body}, timeout=60)
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert words in error["message"] and param in (error["param"] or "") + error["message"]


def test_model_by_id(smollm2_server):
    assert httpx.get(smollm2_server.url + "/v1/models/smollm2").json() == {
        **httpx.get(smollm2_server.url + "/v1/models/smollm2").json(), "id": "smollm2", "object": "model"}
    assert httpx.get(smollm2_server.url + "/v1/models/smollm2:1").json()["id"] == "smollm2:1"
    missing = httpx.get(smollm2_server.url + "/v1/models/nope")
    assert missing.status_code == 404 and "nope" in missing.json()["error"]["message"]


def test_langchain_bind_tools_round_trip(smollm2_server):
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    @tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        return f"{city}: 21 C, clear"

    llm = ChatOpenAI(base_url=smollm2_server.url + "/v1", api_key="unused", model="smollm2", temperature=0, max_tokens=24,
                     max_retries=0)
    asked = [HumanMessage("What is the weather in Paris?")]
    called = llm.bind_tools([get_weather], tool_choice="get_weather").invoke(asked)
    (call,) = called.tool_calls
    assert call["name"] == "get_weather" and "paris" in call["args"]["city"].lower()
    answer = llm.bind_tools([get_weather]).invoke([*asked, called, ToolMessage(get_weather.invoke(call["args"]),
                                                                              tool_call_id=call["id"])])
    assert isinstance(answer.content, str) and answer.content and answer.usage_metadata["input_tokens"] > 40


def test_litellm_tools(smollm2_server):
    import litellm

    reply = litellm.completion(model="openai/smollm2", api_base=smollm2_server.url + "/v1", api_key="unused", messages=ASK,
                               tools=[WEATHER], tool_choice=FORCED, max_tokens=24, temperature=0)
    call = reply.choices[0].message.tool_calls[0]
    assert reply.choices[0].finish_reason == "tool_calls" and call.function.name == "get_weather"
    assert "paris" in _city(call.function.arguments).lower()


def test_logit_bias_steers_the_sampler(smollm2_openai, smollm2_auto_mcp):
    from mcp.engine.tokenizer import Tokenizer
    from mcp.modelfile.reader import open_model

    tokenizer = Tokenizer.from_spec(open_model(smollm2_auto_mcp).header.tokenizer)
    (blue,) = tokenizer.encode(" blue", add_special_tokens=False)
    raw = smollm2_openai.completions.with_raw_response.create(model="smollm2", prompt="The sky is", max_tokens=3,
                                                      temperature=0, logit_bias={str(blue): 100})
    assert "x-mcp-ignored-fields" not in raw.headers
    assert raw.parse().choices[0].text == tokenizer.decode([blue] * 3)
    plain = smollm2_openai.chat.completions.create(model="smollm2", messages=ASK, max_tokens=2, temperature=0,
                                           logprobs=True)
    first = plain.choices[0].logprobs.content[0].token
    (first_id,) = tokenizer.encode(first, add_special_tokens=False)
    banned = smollm2_openai.chat.completions.create(model="smollm2", messages=ASK, max_tokens=2, temperature=0,
                                            logprobs=True, logit_bias={str(first_id): -100})
    assert banned.choices[0].logprobs.content[0].token != first
    with pytest.raises(openai.BadRequestError, match="logit_bias"):
        smollm2_openai.completions.create(model="smollm2", prompt="x", max_tokens=1, logit_bias={"5": 101})

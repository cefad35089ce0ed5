"""Client calls run in the clients' own venv (.ci/clients-openai2: llama-index and instructor pin
openai < 3), against the server the test started: ``python calls.py BASE_URL CASE``. Prints what
the client returned as one JSON object; the test (test_llamaindex_instructor.py) asserts on it.
No mcp import here: this venv holds only the clients."""

from __future__ import annotations

import json
import sys

from pydantic import BaseModel

ASK = "What is the weather in Paris?"


class Weather(BaseModel):
    city: str
    celsius: int


class City(BaseModel):
    name: str
    country: str


def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"{city}: 21 C, clear"


def _llm(base_url: str):
    from llama_index.llms.openai_like import OpenAILike

    return OpenAILike(model="smollm2", api_base=base_url + "/v1", api_key="unused", is_chat_model=True,
                      is_function_calling_model=True, temperature=0, max_tokens=40, max_retries=0,
                      context_window=8192)


def llamaindex_chat_with_tools(base_url: str) -> dict:
    from llama_index.core.tools import FunctionTool

    llm = _llm(base_url)
    response = llm.chat_with_tools([FunctionTool.from_defaults(fn=get_weather)], user_msg=ASK, tool_required=True)
    return {"calls": [{"name": c.tool_name, "kwargs": c.tool_kwargs} for c in llm.get_tool_calls_from_response(
        response, error_on_no_tool_call=False)]}


def llamaindex_predict_and_call(base_url: str) -> dict:
    from llama_index.core.tools import FunctionTool

    response = _llm(base_url).predict_and_call([FunctionTool.from_defaults(fn=get_weather)], user_msg=ASK,
                                               tool_required=True)
    return {"response": str(response), "sources": [
        {"name": s.tool_name, "kwargs": s.raw_input.get("kwargs"), "output": str(s.raw_output)}
        for s in response.sources]}


def llamaindex_structured(base_url: str) -> dict:
    from llama_index.core.llms import ChatMessage

    structured = _llm(base_url).as_structured_llm(output_cls=Weather)
    response = structured.chat([ChatMessage(role="user", content="It is 21 degrees in Paris. Report it.")])
    return {"type": type(response.raw).__name__, "raw": response.raw.model_dump(), "content": response.message.content}


def instructor_mode(base_url: str, mode: str) -> dict:
    import instructor
    import openai

    client = instructor.from_openai(openai.OpenAI(base_url=base_url + "/v1", api_key="unused", max_retries=0),
                                    mode=instructor.Mode[mode])
    ask = "Paris is the capital of France. Give the city and its country."
    # json_object holds the answer to JSON, not to the keys: the 135M model needs the shape shown (and
    # copies its values; the test proves the path, response_format to a parsed City, not the model)
    if mode == "JSON":
        ask += ' Answer with JSON such as {"name": "Rome", "country": "Italy"}.'
    city = client.chat.completions.create(model="smollm2", response_model=City, max_tokens=40, temperature=0,
                                          max_retries=0, messages=[{"role": "user", "content": ask}])
    return {"type": type(city).__name__, "raw": city.model_dump()}


CASES = {"llamaindex_chat_with_tools": llamaindex_chat_with_tools,
         "llamaindex_predict_and_call": llamaindex_predict_and_call,
         "llamaindex_structured": llamaindex_structured,
         "instructor_tools": lambda url: instructor_mode(url, "TOOLS"),
         "instructor_json": lambda url: instructor_mode(url, "JSON"),
         "instructor_json_schema": lambda url: instructor_mode(url, "JSON_SCHEMA")}

if __name__ == "__main__":
    print(json.dumps(CASES[sys.argv[2]](sys.argv[1])))

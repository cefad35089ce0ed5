"""Tool calling and structured output from llama-index (``OpenAILike``) and instructor, against a
real ``mcp2026 serve`` with the default model.

Both libraries force a call (llama-index's ``tool_required``, instructor's TOOLS mode names the
function) or send a JSON Schema; the server's grammar holds the 135M model to the schema, and
greedy decoding keeps the answers deterministic. Each test asserts the arguments or the parsed
object, not only a 200."""

from __future__ import annotations

import instructor
import openai
import pytest
from pydantic import BaseModel

pytestmark = pytest.mark.slow
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


@pytest.fixture(scope="module")
def llm(smollm2_server):
    from llama_index.llms.openai_like import OpenAILike

    return OpenAILike(model="smollm2", api_base=smollm2_server.url + "/v1", api_key="unused", is_chat_model=True,
                      is_function_calling_model=True, temperature=0, max_tokens=40, max_retries=0,
                      context_window=8192)


def test_llamaindex_chat_with_tools_gives_a_call_with_arguments(llm):
    from llama_index.core.tools import FunctionTool

    tool = FunctionTool.from_defaults(fn=get_weather)
    response = llm.chat_with_tools([tool], user_msg=ASK, tool_required=True)
    (call,) = llm.get_tool_calls_from_response(response)
    assert call.tool_name == "get_weather" and "paris" in call.tool_kwargs["city"].lower()


def test_llamaindex_predict_and_call_runs_the_tool(llm):
    from llama_index.core.tools import FunctionTool

    tool = FunctionTool.from_defaults(fn=get_weather)
    response = llm.predict_and_call([tool], user_msg=ASK, tool_required=True)
    (source,) = response.sources
    assert source.tool_name == "get_weather" and source.raw_output.endswith(": 21 C, clear")
    assert "paris" in source.raw_input["kwargs"]["city"].lower()


def test_llamaindex_structured_llm_returns_the_pydantic_object(llm):
    from llama_index.core.llms import ChatMessage

    structured = llm.as_structured_llm(output_cls=Weather)
    response = structured.chat([ChatMessage(role="user", content="It is 21 degrees in Paris. Report it.")])
    assert isinstance(response.raw, Weather) and response.raw.city.strip()
    assert Weather.model_validate_json(response.message.content) == response.raw


@pytest.mark.parametrize("mode", [instructor.Mode.TOOLS, instructor.Mode.JSON, instructor.Mode.JSON_SCHEMA])
def test_instructor_modes_return_the_parsed_object(smollm2_server, mode):
    client = instructor.from_openai(openai.OpenAI(base_url=smollm2_server.url + "/v1", api_key="unused",
                                                  max_retries=0), mode=mode)
    city = client.chat.completions.create(
        model="smollm2", response_model=City, max_tokens=40, temperature=0, max_retries=0,
        messages=[{"role": "user", "content": "Paris is the capital of France. Give the city and its country."}])
    assert isinstance(city, City) and city.name.strip() and city.country.strip()

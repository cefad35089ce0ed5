"""pydantic-ai against a real ``mcp2026 serve`` with the default model, through its Responses API
model (``OpenAIResponsesModel``: ``/v1/responses``) and its chat model (``OpenAIChatModel``).

An ``output_type`` pydantic model comes back parsed: by default pydantic-ai asks for it as a call
of its output tool (``tool_choice: required``, which the grammar enforces), and as
``NativeOutput`` through ``text.format`` / ``response_format`` json_schema. With a function tool,
the agent is steered the way pydantic-ai documents (``PrepareTools`` / ``PrepareOutputTools``):
the weather tool alone on the first step, the output tool after it, so that the 135M model calls
the tool, gets its answer back and fills in the report."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

pytest.importorskip("pydantic_ai", reason="pip install 'pydantic-ai-slim[openai]' (the test extra has it)")
from pydantic_ai import Agent, NativeOutput  # noqa: E402
from pydantic_ai.capabilities import PrepareOutputTools, PrepareTools  # noqa: E402
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402
from pydantic_ai.settings import ModelSettings  # noqa: E402

pytestmark = pytest.mark.slow
SETTINGS = ModelSettings(temperature=0, max_tokens=60)
MODELS = {"responses": OpenAIResponsesModel, "chat": OpenAIChatModel}


class Person(BaseModel):
    name: str
    age: int


class Report(BaseModel):
    city: str
    weather: str


@pytest.fixture(params=sorted(MODELS))
def model(request, smollm2_server):
    provider = OpenAIProvider(base_url=smollm2_server.url + "/v1", api_key="unused")
    return MODELS[request.param]("smollm2", provider=provider)


@pytest.mark.parametrize("output", [Person, NativeOutput(Person)], ids=["tool-output", "native-output"])
def test_output_type_comes_back_parsed(model, output):
    result = Agent(model, output_type=output, model_settings=SETTINGS).run_sync("Describe a person.")
    assert isinstance(result.output, Person) and result.output.name.strip()


async def _weather_first(ctx, tools):
    return tools if ctx.run_step == 1 else []


async def _answer_after(ctx, tools):
    return [] if ctx.run_step == 1 else tools


def test_function_tool_then_parsed_report(model):
    calls: list[str] = []
    agent = Agent(model, output_type=Report, model_settings=SETTINGS,
                  capabilities=[PrepareTools(_weather_first), PrepareOutputTools(_answer_after)])

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        calls.append(city)
        return f"sunny, 21 degrees in {city}"

    result = agent.run_sync("What is the weather in Paris?")
    (city,) = calls
    assert "paris" in city.lower()
    assert isinstance(result.output, Report) and result.output.city.strip()
    returned = [part.content for message in result.all_messages() for part in message.parts
                if getattr(part, "part_kind", "") == "tool-return" and part.tool_name == "get_weather"]
    assert returned == [f"sunny, 21 degrees in {city}"]

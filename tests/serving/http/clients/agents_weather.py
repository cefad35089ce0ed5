"""An openai-agents Agent with one function tool, against the server at argv[1] (``.../v1``).

Run in its own venv (see test_responses_agents.py): argv[2] names the model class,
``responses`` (OpenAIResponsesModel, the SDK's default) or ``chat`` (OpenAIChatCompletionsModel).
Prints one JSON object: the tool's calls (their arguments) and the run's final output."""

from __future__ import annotations

import json
import sys

from agents import (Agent, ModelSettings, OpenAIChatCompletionsModel, OpenAIResponsesModel, Runner, function_tool,
                    set_tracing_disabled)
from openai import AsyncOpenAI

calls: list[dict] = []


@function_tool
def get_weather(city: str) -> str:
    """The current weather in a city."""
    calls.append({"city": city})
    return f"The weather in {city} is sunny, 21 degrees."


def main(base_url: str, kind: str) -> None:
    set_tracing_disabled(True)  # nothing leaves the machine
    client = AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0)
    model_class = OpenAIResponsesModel if kind == "responses" else OpenAIChatCompletionsModel
    agent = Agent(name="weather", instructions="Answer with the weather.", tools=[get_weather],
                  model=model_class(model="smollm2", openai_client=client),
                  model_settings=ModelSettings(tool_choice="get_weather", temperature=0, max_tokens=64))
    result = Runner.run_sync(agent, "What is the weather in Paris?", max_turns=3)
    print(json.dumps({"calls": calls, "final_output": result.final_output,
                      "items": [item.type for item in result.new_items]}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

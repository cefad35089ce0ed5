"""Tool calls out of a model's answer, per template family, whole and streamed; the prompt a
request's tools make (the template's ``tools=`` or the fallback). Pure functions: no model."""

from __future__ import annotations

import json

import pytest

from mcp.serving.errors import FieldError
from mcp.serving.tools.parse import parse_answer
from mcp.serving.tools.plan import ToolPlan
from mcp.serving.tools.prompt import family_of, tool_prompt
from mcp.serving.tools.spec import AUTO, Tool, ToolChoice, checked_choice

WEATHER = Tool("get_weather", "the weather in a city",
               {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
NAMES = {"get_weather", "get_time"}


def test_hermes_calls_and_text_around_them():
    text = 'Let me look.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>' \
           '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>'
    answer = parse_answer(text, "hermes", NAMES)
    assert [(c.name, json.loads(c.arguments)) for c in answer.tool_calls] == [
        ("get_weather", {"city": "Paris"}), ("get_time", {})]
    assert answer.content == "Let me look."
    assert all(c.id.startswith("call_") for c in answer.tool_calls)


def test_llama3_json_calls_with_parameters():
    text = ('<|python_tag|>{"name": "get_weather", "parameters": {"city": "Oslo"}}; '
            '{"name": "get_time", "parameters": {}}')
    answer = parse_answer(text, "llama3", NAMES)
    assert [c.name for c in answer.tool_calls] == ["get_weather", "get_time"]
    assert json.loads(answer.tool_calls[0].arguments) == {"city": "Oslo"} and answer.content is None


def test_mistral_marker_and_array():
    answer = parse_answer('[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Rome"}}]', "mistral", NAMES)
    assert json.loads(answer.tool_calls[0].arguments) == {"city": "Rome"}
    skipped = parse_answer('[{"name": "get_time", "arguments": "{}"}]', "mistral", NAMES)  # marker decoded away
    assert skipped.tool_calls[0].name == "get_time" and skipped.tool_calls[0].arguments == "{}"


@pytest.mark.parametrize("text", [
    '<tool_call>{"name": "delete_all", "arguments": {}}</tool_call>',  # not an offered tool
    '<tool_call>{"name": "get_weather", "arguments": {"city": </tool_call>',  # broken JSON
    "Paris is sunny.",
])
def test_no_valid_call_leaves_the_text(text):
    answer = parse_answer(text, "hermes", NAMES)
    assert answer.tool_calls == () and answer.content == text


def test_plan_validates_arguments_against_the_schema():
    plan = ToolPlan("fallback", (WEATHER,), AUTO)
    assert plan.parse('<tool_call>{"name": "get_weather", "arguments": {"town": "x"}}</tool_call>').tool_calls == ()
    good = plan.parse('<tool_call>{"name": "get_weather", "arguments": {"city": "x"}}</tool_call>')
    assert good.tool_calls[0].arguments == '{"city": "x"}'


def test_forced_plan_puts_the_continuation_back_and_drops_trailing_text():
    plan = ToolPlan("fallback", (WEATHER,), ToolChoice("function", "get_weather"),
                    continuation='<tool_call>{"name": "get_weather", "arguments": {"city": "')
    answer = plan.parse('Paris"}}</tool_call>\nThe weather is fine.')
    assert answer.content is None and json.loads(answer.tool_calls[0].arguments) == {"city": "Paris"}


def test_stream_sends_text_before_a_call_and_holds_the_call():
    stream = ToolPlan("hermes", (WEATHER,), AUTO).stream()
    pieces = ["Sure", ". <tool", '_call>{"name": "get_weather", ', '"arguments": {"city": "Lima"}}</tool_call>']
    sent = "".join(stream.feed(p) for p in pieces)
    assert sent == "Sure. "
    answer = stream.finish()
    assert answer.tool_calls[0].name == "get_weather" and answer.content is None


def test_stream_without_a_call_sends_everything():
    stream = ToolPlan("hermes", (WEATHER,), AUTO).stream()
    sent = "".join(stream.feed(p) for p in ["a <", "b", " c"])
    assert sent + (stream.finish().content or "") == "a <b c"


def test_family_of_templates():
    assert family_of("{{ messages }}") == "fallback"  # SmolLM2's: no tools
    assert family_of("{% if tools %}<tool_call>{% endif %}") == "hermes"
    assert family_of("{% if tools %}[TOOL_CALLS]{% endif %}") == "mistral"
    assert family_of("{% if tools %}<|python_tag|>{% endif %}") == "llama3"


def test_fallback_prompt_lists_tools_and_writes_calls_and_results_back():
    messages = [{"role": "user", "content": "Weather in Paris?"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
                {"role": "tool", "content": '{"temp_c": 21}', "tool_call_id": "call_1"}]
    prompt = tool_prompt(messages, [WEATHER], AUTO, "fallback", {})
    system, user, assistant, tool = prompt.messages
    assert system["role"] == "system" and '"name": "get_weather"' in system["content"]
    assert assistant["content"] == '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    assert tool == {"role": "user", "content": '<tool_response>\n{"temp_c": 21}\n</tool_response>'}
    assert prompt.continuation == "" and "tools" not in prompt.template_kwargs


def test_template_prompt_passes_tools_and_forced_start():
    prompt = tool_prompt([{"role": "user", "content": "hi"}], [WEATHER], ToolChoice("required"), "hermes", {"x": 1})
    assert prompt.template_kwargs["tools"][0]["function"]["name"] == "get_weather" and prompt.template_kwargs["x"] == 1
    assert prompt.continuation == '<tool_call>\n{"name": "get_weather", "arguments": {"city": "'
    none = tool_prompt([{"role": "user", "content": "hi"}], [WEATHER], ToolChoice("none"), "hermes", {})
    assert "tools" not in none.template_kwargs and none.continuation == ""


def test_a_choice_must_name_an_offered_tool():
    with pytest.raises(FieldError, match="not in tools"):
        checked_choice(ToolChoice("function", "nope"), [WEATHER])
    with pytest.raises(FieldError, match="no tools"):
        checked_choice(ToolChoice("required"), [])


# The tool parts of Qwen 2.5's chat template (Hermes format), as Hugging Face ships it.
QWEN_LIKE = (
    "{%- if tools %}<|im_start|>system\n# Tools\n<tools>{% for tool in tools %}\n{{ tool | tojson }}{% endfor %}\n"
    "</tools>\nReturn each call within <tool_call></tool_call> tags<|im_end|>\n{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'assistant' and message.tool_calls %}<|im_start|>assistant"
    "{%- for tool_call in message.tool_calls %}{%- if tool_call.function is defined %}"
    "{%- set tool_call = tool_call.function %}{%- endif %}\n<tool_call>\n"
    '{"name": "{{ tool_call.name }}", "arguments": {{ tool_call.arguments | tojson }}}\n</tool_call>'
    "{%- endfor %}<|im_end|>\n"
    "{%- elif message.role == 'tool' %}<|im_start|>user\n<tool_response>\n{{ message.content }}\n"
    "</tool_response><|im_end|>\n"
    "{%- else %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n{%- endif %}"
    "{%- endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}")


def test_a_tool_template_renders_tools_calls_and_results_the_hugging_face_way():
    from mcp.engine.tokenizer import _compile_chat_template

    messages = [{"role": "user", "content": "Weather in Oslo?"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]},
                {"role": "tool", "content": "7 C", "tool_call_id": "call_1"}]
    assert family_of(QWEN_LIKE) == "hermes"
    prompt = tool_prompt(messages, [WEATHER], ToolChoice("function", "get_weather"), "hermes", {})
    text = _compile_chat_template(QWEN_LIKE).render(messages=prompt.messages, add_generation_prompt=True,
                                                     **prompt.template_kwargs) + prompt.continuation
    assert '{"type": "function", "function": {"name": "get_weather", "description": "the weather in a city"' in text
    assert '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>' in text  # an object
    assert "<tool_response>\n7 C\n</tool_response>" in text
    assert text.endswith('assistant<tool_call>\n{"name": "get_weather", "arguments": {"city": "')

"""The one typed request (serving/request.py) as each transport's adapter builds it: the same
conversation over HTTP and gRPC is the same request; bounds are checked on construction and a
bad field is a FieldError naming it as that transport spells it."""

from __future__ import annotations

import json

import pytest

from mcp.base.errors import InvalidRequestError
from mcp.config.runtime import GenerationDefaults, RuntimeConfig
from mcp.config.serving import Tenant
from mcp.engine.handle import RequestOptions
from mcp.engine.params import SamplingParams
from mcp.engine.scheduler.slo import SLOClass
from mcp.serving.errors import FieldError
from mcp.serving.grpc import convert as grpc_convert
from mcp.serving.grpc._gen import inference_pb2 as pb
from mcp.serving.grpc.context import RequestContext
from mcp.serving.http import convert as http_convert
from mcp.serving.http import schemas as s
from mcp.serving.request import Prompt, Sampling, ServingRequest
from mcp.serving.tenants import Caller

CONFIG = RuntimeConfig()
TRACE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
CHAT_ROUTE, INFER_ROUTE = "POST /v1/chat/completions", "grpc /mcp.v1.InferenceService/Infer"


def _http(body: dict, sla_class: str | None = None, headers: dict | None = None) -> ServingRequest:
    model = s.ChatCompletionRequest if "messages" in body else s.CompletionRequest
    route = CHAT_ROUTE if "messages" in body else "POST /v1/completions"
    return http_convert.request_of(model.model_validate(body), route, headers or {}, sla_class, CONFIG, "acme")


def _grpc(request: pb.InferRequest, sla_class: str | None = None, metadata=()) -> ServingRequest:
    context = RequestContext(Caller(Tenant("acme", ()), authenticated=False), sla_class=sla_class)
    return grpc_convert.request_of(request, context, metadata, CONFIG, INFER_ROUTE)


def _field_error(build, *args, **kwargs) -> FieldError:
    with pytest.raises(FieldError) as caught:
        build(*args, **kwargs)
    return caught.value


def test_the_same_chat_over_http_and_grpc_is_the_same_request():
    over_http = _http({"model": "tiny:1", "messages": [{"role": "developer", "content": "Be brief."},
                                                      {"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
                       "max_tokens": 7, "temperature": 0.5, "top_p": 0.9, "seed": 3, "stop": "END",
                       "logprobs": True, "top_logprobs": 2, "user": "u-1"},
                      sla_class="HIGH", headers={"Traceparent": TRACE, "x-other": "dropped"})
    conversation = pb.Conversation(messages=[pb.ChatMessage(role="developer", content="Be brief."),
                                             pb.ChatMessage(role="user", content="Hi")])
    over_grpc = _grpc(pb.InferRequest(
        model="tiny:1", user="u-1", chat=conversation,
        sampling=pb.SamplingParams(max_tokens=7, temperature=0.5, top_p=0.9, seed=3, stop=["END"], logprobs=2)),
        sla_class="high", metadata=[("traceparent", TRACE), ("x-other", "dropped")])
    for served in (over_http, over_grpc):
        assert served.chat and served.operation == "chat" and served.n == 1 and served.num_choices == 1
        assert served.prompts == (Prompt(messages=[{"role": "system", "content": "Be brief."},
                                                   {"role": "user", "content": "Hi"}]),)
        assert served.tenant == "acme" and served.user == "u-1" and served.model == "tiny:1"
        assert served.slo_class is SLOClass.HIGH and served.timeout_s == CONFIG.serving.request_timeout_s
        assert dict(served.trace_context) == {"traceparent": TRACE}
        assert served.max_tokens == 7 and served.logprobs
    # top_p may differ in its last bits: the proto carries a float32
    assert over_http.sampling == Sampling(max_tokens=7, temperature=0.5, top_p=0.9, seed=3, stop=("END",), logprobs=2)
    assert over_grpc.sampling.stop == ("END",) and over_grpc.sampling.seed == 3
    assert over_http.request_id.startswith("chatcmpl-") and over_grpc.request_id.startswith("infer-")
    assert (over_http.route, over_grpc.route) == (CHAT_ROUTE, INFER_ROUTE)


def test_a_completion_request_holds_each_prompt_and_n():
    served = _http({"prompt": ["a", "b"], "n": 3, "ignore_eos": True, "logprobs": 0})
    assert not served.chat and served.operation == "text_completion"
    assert served.prompts == (Prompt(text="a"), Prompt(text="b")) and served.num_choices == 6
    assert served.sampling.ignore_eos and served.sampling.logprobs == 0 and served.logprobs
    assert served.request_id.startswith("cmpl-")


def test_max_tokens_left_out_is_the_configs_default_within_the_servers_limit():
    assert _http({"prompt": "x"}).max_tokens == min(CONFIG.generation.max_tokens, CONFIG.serving.limits.max_tokens)
    assert _grpc(pb.InferRequest(prompt="x")).max_tokens == _http({"prompt": "x"}).max_tokens
    assert _http({"messages": [{"role": "user", "content": "x"}], "max_tokens": 9,
                  "max_completion_tokens": 5}).max_tokens == 5


@pytest.mark.parametrize("body, param, text", [
    ({"prompt": "x", "max_tokens": 4097}, "max_tokens", "max_tokens is 4097; this server allows at most 4096"),
    ({"prompt": "x", "n": 9}, "n", "n is 9; this server allows at most 8"),
    ({"prompt": ["x"] * 9, "n": 8}, "prompt", "72 choices; this server takes at most 64"),
    ({"prompt": "x", "echo": True}, "echo", "echo is not supported"),
    ({"prompt": "x" * 200_001}, "prompt", "prompt has 200001 characters; this server takes at most 200000"),
    ({"messages": [{"role": "user", "content": "x" * 200_001}]}, "messages", "messages has 200001 characters"),
])
def test_http_limits_are_field_errors_naming_the_field(body, param, text):
    error = _field_error(_http, body)
    assert error.param == param and text in str(error)


def test_http_sla_class_header_is_checked():
    error = _field_error(_http, {"prompt": "x"}, "urgent")
    assert error.param == "x-sla-class"
    assert str(error) == "header x-sla-class: unknown SLO class 'urgent'; use one of critical, high, medium, low"


@pytest.mark.parametrize("sampling, param, text", [
    (pb.SamplingParams(temperature=-1), "sampling.temperature", "temperature must be >= 0, got -1.0"),
    (pb.SamplingParams(top_p=1.5), "sampling.top_p", "top_p must be in (0, 1], got 1.5"),
    (pb.SamplingParams(min_p=1), "sampling.min_p", "min_p must be in [0, 1), got 1.0"),
    (pb.SamplingParams(repetition_penalty=0), "sampling.repetition_penalty", "repetition_penalty must be > 0"),
    (pb.SamplingParams(presence_penalty=3), "sampling.presence_penalty", "presence_penalty must be in [-2, 2]"),
    (pb.SamplingParams(frequency_penalty=float("nan")), "sampling.frequency_penalty", "frequency_penalty must be"),
    (pb.SamplingParams(stop=[""]), "sampling.stop", "stop[0] must be a non-empty string"),
    (pb.SamplingParams(stop=["s"] * 17), "sampling.stop", "stop may hold at most 16 strings, got 17"),
    (pb.SamplingParams(top_k=2**32 - 1), "sampling.top_k", "sampling.top_k is 4294967295; at most 2147483647"),
    (pb.SamplingParams(max_tokens=0), "sampling.max_tokens", "sampling.max_tokens is 0; ask for at least 1 token"),
    (pb.SamplingParams(max_tokens=4097), "sampling.max_tokens", "this server allows at most 4096"),
    (pb.SamplingParams(logprobs=21), "sampling.logprobs", "ask for at most 20 alternatives per token"),
])
def test_grpc_sampling_out_of_bounds_is_a_field_error_naming_the_proto_field(sampling, param, text):
    error = _field_error(_grpc, pb.InferRequest(prompt="x", sampling=sampling))
    assert error.param == param and text in str(error)


@pytest.mark.parametrize("request_, param", [
    (pb.InferRequest(), "input"),
    (pb.InferRequest(chat=pb.Conversation()), "chat.messages"),
    (pb.InferRequest(chat=pb.Conversation(messages=[pb.ChatMessage(role="robot", content="x")])),
     "chat.messages[0].role"),
    (pb.InferRequest(prompt="x" * 200_001), "prompt"),
])
def test_grpc_input_errors_name_the_field(request_, param):
    assert _field_error(_grpc, request_).param == param


@pytest.mark.parametrize("field, value, text", [
    ("temperature", -0.5, "temperature must be >= 0, got -0.5"),
    ("top_p", 0, "top_p must be in (0, 1], got 0"),
    ("top_k", -1, "top_k must be an integer in [0, 2147483647] (0 = off), got -1"),
    ("max_tokens", 0, "max_tokens must be an integer in [1, 2147483647], got 0"),
    ("seed", 2**64, "seed must be an integer in [-2**63, 2**64 - 1] or None, got 18446744073709551616"),
    ("logprobs", 21, "logprobs must be an integer in [0, 20] or None, got 21"),
    ("temperature", "0.5", "temperature must be a number >= 0, got '0.5'"),
])
def test_sampling_is_checked_on_construction_by_the_engines_bounds(field, value, text):
    with pytest.raises(FieldError) as caught:
        Sampling(**{field: value})
    assert caught.value.param == field and str(caught.value) == text


def test_sampling_resolves_over_the_models_defaults_and_seeds_each_choice():
    defaults = GenerationDefaults(temperature=0.7, top_p=0.95, stop=("\n\n",))
    sampling = Sampling(max_tokens=12, temperature=0.0, seed=10, logprobs=1)
    assert sampling.resolve(defaults) == SamplingParams(max_tokens=12, temperature=0.0, top_p=0.95, seed=10,
                                                        stop=("\n\n",), logprobs=1)
    assert [sampling.resolve(defaults, choice=j).seed for j in range(3)] == [10, 11, 12]
    assert Sampling(max_tokens=1).resolve(defaults, choice=2).seed is None
    with pytest.raises(InvalidRequestError, match="seed must be an integer"):  # seed + j past the range
        Sampling(max_tokens=1, seed=2**64 - 1).resolve(defaults, choice=1)


def _request(**fields) -> ServingRequest:
    base = {"request_id": "r-1", "route": CHAT_ROUTE, "chat": True, "tenant": "acme",
            "prompts": (Prompt(messages=[{"role": "user", "content": "a"}]),), "sampling": Sampling(max_tokens=4)}
    return ServingRequest(**{**base, **fields})


@pytest.mark.parametrize("fields, param, text", [
    ({"n": 0}, "n", "n is 0; give an integer in [1, 2147483647]"),
    ({"n": True}, "n", "n is True"),
    ({"prompts": ()}, "prompt", "the request has no prompt"),
])
def test_request_options_are_checked_on_construction(fields, param, text):
    error = _field_error(_request, **fields)
    assert error.param == param and text in str(error)


@pytest.mark.parametrize("fields, text", [
    ({"tenant": ""}, "tenant must be a non-empty string"),
    ({"timeout_s": 0}, "timeout must be a positive number of seconds"),
    ({"sampling": Sampling()}, "a served request states max_tokens"),
    ({"prompts": (Prompt(text="a"),)}, "a chat request takes conversations"),
])
def test_a_request_that_cannot_run_is_refused_on_construction(fields, text):
    with pytest.raises(InvalidRequestError, match=text):
        _request(**fields)


def test_a_prompt_is_messages_or_a_text():
    with pytest.raises(InvalidRequestError, match="either messages or a text"):
        Prompt()
    with pytest.raises(InvalidRequestError, match="either messages or a text"):
        Prompt(messages=[], text="x")


def test_scheduling_carries_class_tenant_and_deadline():
    assert _request().scheduling() == RequestOptions(SLOClass.MEDIUM, "acme", None)
    critical = _request(slo_class=SLOClass.CRITICAL, timeout_s=2.5)  # CRITICAL is 0: still not the default
    assert critical.scheduling() == RequestOptions(SLOClass.CRITICAL, "acme", 2.5)


def test_a_redaction_replaces_the_texts_in_order_and_keeps_the_rest():
    served = _request(prompts=(Prompt(messages=[{"role": "system", "content": "s", "name": "x"},
                                                {"role": "user", "content": "my card 4111"}]),))
    assert served.texts() == ("s", "my card 4111")
    redacted = served.with_texts(("s", "my card [REDACTED]"))
    assert redacted.prompts[0].messages == [{"role": "system", "content": "s", "name": "x"},
                                            {"role": "user", "content": "my card [REDACTED]"}]
    assert redacted.sampling is served.sampling and redacted.request_id == served.request_id
    texts = _request(chat=False, prompts=(Prompt(text="a"), Prompt(text="b")))
    assert texts.with_texts(("A", "B")).prompts == (Prompt(text="A"), Prompt(text="B"))


def test_tools_and_tool_turns_are_the_same_request_from_both_transports():
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    call = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}
    http = _http({"messages": [{"role": "user", "content": "Weather?"},
                               {"role": "assistant", "content": None, "tool_calls": [call]},
                               {"role": "tool", "tool_call_id": "call_1", "content": "7 C"}],
                  "tools": [{"type": "function", "function": {"name": "get_weather", "description": "d",
                                                              "parameters": schema}}],
                  "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
                  "parallel_tool_calls": False, "logit_bias": {"5": 1.5}})
    grpc = _grpc(pb.InferRequest(
        chat=pb.Conversation(messages=[
            pb.ChatMessage(role="user", content="Weather?"),
            pb.ChatMessage(role="assistant", tool_calls=[pb.ToolCall(id="call_1", name="get_weather",
                                                                     arguments_json='{"city": "Oslo"}')]),
            pb.ChatMessage(role="tool", tool_call_id="call_1", content="7 C")]),
        tools=[pb.Tool(name="get_weather", description="d", parameters_json=json.dumps(schema))],
        tool_choice=pb.ToolChoice(mode=pb.ToolChoice.MODE_FUNCTION, function="get_weather"),
        parallel_tool_calls=False, sampling=pb.SamplingParams(logit_bias={5: 1.5})))
    assert http.tools == grpc.tools and http.tools[0].parameters == schema
    assert http.tool_choice == grpc.tool_choice and http.tool_choice.name == "get_weather"
    assert http.parallel_tool_calls is False and grpc.parallel_tool_calls is False
    assert http.prompts[0].messages == grpc.prompts[0].messages
    assert http.prompts[0].messages[1] == {"role": "assistant", "content": "", "tool_calls": [call]}
    assert http.sampling.logit_bias == grpc.sampling.logit_bias == ((5, 1.5),)

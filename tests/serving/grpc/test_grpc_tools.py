"""Tool calling over gRPC through a real channel with the real default model: the same typed
request as HTTP (``tools``, ``tool_choice``, an assistant turn's calls, a ``tool`` turn), calls
parsed into ``tool_calls`` whole and at the end of a stream, and bad tool fields named."""

from __future__ import annotations

import json

import grpc
import pytest

from mcp.serving.grpc._gen import inference_pb2 as pb

pytestmark = pytest.mark.slow
WEATHER = pb.Tool(name="get_weather", description="The current weather in a city", parameters_json=json.dumps(
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}))
ASK = pb.Conversation(messages=[pb.ChatMessage(role="user", content="What is the weather in Paris?")])
FORCED = pb.ToolChoice(mode=pb.ToolChoice.MODE_FUNCTION, function="get_weather")
SAMPLING = pb.SamplingParams(max_tokens=24, temperature=0.0)


@pytest.fixture(scope="module")
def stub(grpc_server_factory, smollm2_auto_mcp):
    server = grpc_server_factory({"runtime": {"device": "cpu"},
                                  "serving": {"models": [{"name": "smollm2", "source": str(smollm2_auto_mcp)}]}})
    return server.stub()


def test_forced_call_whole_and_streamed(stub):
    request = pb.InferRequest(chat=ASK, sampling=SAMPLING, tools=[WEATHER], tool_choice=FORCED)
    reply = stub.Infer(request)
    assert reply.finish_reason == pb.FINISH_REASON_TOOL_CALLS and reply.text == ""
    (call,) = reply.tool_calls
    assert call.name == "get_weather" and call.id.startswith("call_")
    assert "paris" in json.loads(call.arguments_json)["city"].lower()
    messages = list(stub.InferStream(request))
    assert "".join(m.text for m in messages) == ""
    assert [c.arguments_json for c in messages[-1].tool_calls] == [call.arguments_json]
    assert messages[-1].finish_reason == pb.FINISH_REASON_TOOL_CALLS


def test_round_trip_turns_are_taken(stub):
    first = stub.Infer(pb.InferRequest(chat=ASK, sampling=SAMPLING, tools=[WEATHER], tool_choice=FORCED))
    turn = pb.Conversation(messages=[*ASK.messages, pb.ChatMessage(role="assistant", tool_calls=first.tool_calls),
                                     pb.ChatMessage(role="tool", tool_call_id=first.tool_calls[0].id,
                                                    content='{"temperature_c": 21, "sky": "clear"}')])
    second = stub.Infer(pb.InferRequest(chat=turn, sampling=pb.SamplingParams(max_tokens=8, temperature=0.0),
                                        tools=[WEATHER]))
    assert second.finish_reason in (pb.FINISH_REASON_STOP, pb.FINISH_REASON_LENGTH, pb.FINISH_REASON_TOOL_CALLS)
    assert second.usage.prompt_tokens >= first.usage.prompt_tokens + 20


@pytest.mark.parametrize("request_fields,param", [
    ({"tools": [pb.Tool(name="get weather")]}, "tools[0].name"),
    ({"tools": [pb.Tool(name="f", parameters_json="[1]")]}, "tools[0].parameters_json"),
    ({"tools": [WEATHER], "tool_choice": pb.ToolChoice(mode=pb.ToolChoice.MODE_FUNCTION, function="nope")},
     "tool_choice"),
    ({"tool_choice": pb.ToolChoice(mode=pb.ToolChoice.MODE_REQUIRED)}, "tool_choice"),
])
def test_bad_tool_fields_are_invalid_argument_naming_them(stub, request_fields, param):
    with pytest.raises(grpc.RpcError) as raised:
        stub.Infer(pb.InferRequest(chat=ASK, sampling=SAMPLING, **request_fields))
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert dict(raised.value.trailing_metadata())["x-error-param"] == param


def test_logit_bias_over_grpc(stub, smollm2_auto_mcp):
    from mcp.engine.tokenizer import Tokenizer
    from mcp.modelfile.reader import open_model

    tokenizer = Tokenizer.from_spec(open_model(smollm2_auto_mcp).header.tokenizer)
    (blue,) = tokenizer.encode(" blue", add_special_tokens=False)
    reply = stub.Infer(pb.InferRequest(prompt="The sky is", sampling=pb.SamplingParams(
        max_tokens=3, temperature=0.0, logit_bias={blue: 100.0})))
    assert list(reply.token_ids) == [blue] * 3
    with pytest.raises(grpc.RpcError) as raised:
        stub.Infer(pb.InferRequest(prompt="x", sampling=pb.SamplingParams(max_tokens=1, logit_bias={1: 500.0})))
    assert dict(raised.value.trailing_metadata())["x-error-param"] == "sampling.logit_bias"

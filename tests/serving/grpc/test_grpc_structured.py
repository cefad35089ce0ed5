"""Structured output through gRPC: ``SamplingParams.response_format`` on a real channel to a
server with the default model; JSON that validates against its schema, our regex, and a schema
the engine cannot compile as INVALID_ARGUMENT naming the problem and the field."""

from __future__ import annotations

import json
import re

import grpc
import pytest

from mcp.serving.grpc._gen import inference_pb2 as pb

pytestmark = pytest.mark.slow
PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 24}, "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}


@pytest.fixture(scope="module")
def stub(grpc_server_factory, smollm2_auto_mcp):
    server = grpc_server_factory({"runtime": {"device": "cpu"},
                                  "scheduler": {"kv_cache_bytes": 256 * 16 * 46080},
                                  "serving": {"models": [{"name": "smollm2", "source": str(smollm2_auto_mcp)}]}})
    return server.stub()


def _chat(text: str) -> pb.Conversation:
    return pb.Conversation(messages=[pb.ChatMessage(role="user", content=text)])


def test_json_schema_answer_validates_and_regex_matches(stub):
    fmt = pb.ResponseFormat(json_schema=pb.JsonSchema(name="person", schema=json.dumps(PERSON), strict=True))
    reply = stub.Infer(pb.InferRequest(chat=_chat("Give me a person as JSON with name and age."),
                                       sampling=pb.SamplingParams(max_tokens=60, temperature=0.0,
                                                                  response_format=fmt)))
    person = json.loads(reply.text)
    assert set(person) == {"name", "age"} and isinstance(person["age"], int) and len(person["name"]) <= 24
    assert reply.finish_reason == pb.FINISH_REASON_STOP
    chunks = stub.InferStream(pb.InferRequest(
        chat=_chat("What is your phone number?"),
        sampling=pb.SamplingParams(max_tokens=20, temperature=0.0,
                                   response_format=pb.ResponseFormat(regex="[0-9]{3}-[0-9]{4}"))))
    assert re.fullmatch("[0-9]{3}-[0-9]{4}", "".join(chunk.text for chunk in chunks))


@pytest.mark.parametrize(("fmt", "reason"), [
    (pb.ResponseFormat(json_schema=pb.JsonSchema(name="p", schema='{"$ref": "#/missing"}')), "/missing"),
    (pb.ResponseFormat(json_schema=pb.JsonSchema(name="p", schema="{not json")), "cannot be compiled"),
    (pb.ResponseFormat(grammar="start: nowhere"), "nowhere"),
    (pb.ResponseFormat(regex=""), "needs its pattern"),
])
def test_a_format_the_engine_cannot_compile_is_invalid_argument(stub, fmt, reason):
    with pytest.raises(grpc.RpcError) as caught:
        stub.Infer(pb.InferRequest(prompt="x", sampling=pb.SamplingParams(max_tokens=4, response_format=fmt)))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT and reason in caught.value.details()
    assert dict(caught.value.trailing_metadata())["x-error-param"] == "sampling.response_format"

"""Infer and InferStream through a real channel: the SDK's tokens, streamed chunks that add up to
the unary answer, bad input named field by field, and a cancelled stream that stops its sequence."""

from __future__ import annotations

import time

import grpc
import pytest

from mcp.runtime.session import Session
from mcp.serving.grpc._gen import inference_pb2 as pb

GREEDY = {"temperature": 0.0, "ignore_eos": True}


@pytest.fixture(scope="module")
def server(grpc_server_factory, tiny_config):
    return grpc_server_factory(tiny_config(limits={"max_tokens": 256, "max_prompt_chars": 2000}))


@pytest.fixture(scope="module")
def stub(server):
    return server.stub()


@pytest.fixture(scope="module")
def sdk_model(server, tiny_mcp):
    """The same model file through the SDK, in a Session of its own."""
    with Session(server.config) as session:
        yield session.load_model(str(tiny_mcp))


def test_infer_tokens_equal_the_sdk_greedy_tokens(stub, sdk_model):
    reply = stub.Infer(pb.InferRequest(prompt="The sky is", sampling=pb.SamplingParams(max_tokens=12, **GREEDY)))
    expected = sdk_model.infer("The sky is", raw=True, max_tokens=12, **GREEDY)
    assert list(reply.token_ids) == list(expected.token_ids) and len(reply.token_ids) == 12
    assert reply.text == expected.text and reply.model == "tiny:1" and reply.id.startswith("infer-")
    assert reply.finish_reason == pb.FINISH_REASON_LENGTH
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (expected.usage.prompt_tokens, 12)
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + 12

    chat = [pb.ChatMessage(role="system", content="Be brief."), pb.ChatMessage(role="user", content="Hi")]
    reply = stub.Infer(pb.InferRequest(chat=pb.Conversation(messages=chat),
                                       sampling=pb.SamplingParams(max_tokens=6, **GREEDY)))
    expected = sdk_model.chat([{"role": m.role, "content": m.content} for m in chat], max_tokens=6, **GREEDY)
    assert list(reply.token_ids) == list(expected.token_ids)


def test_stream_chunks_add_up_to_the_unary_answer(stub):
    request = pb.InferRequest(prompt="1 2 3", sampling=pb.SamplingParams(max_tokens=10, logprobs=3, **GREEDY))
    whole = stub.Infer(request)
    chunks = list(stub.InferStream(request))
    assert len(chunks) == 11  # one per token, then the end
    assert "".join(c.text for c in chunks) == whole.text
    assert [t for c in chunks for t in c.token_ids] == list(whole.token_ids)
    assert all(c.finish_reason == pb.FINISH_REASON_UNSPECIFIED and not c.HasField("usage") for c in chunks[:-1])
    last = chunks[-1]
    assert last.finish_reason == pb.FINISH_REASON_LENGTH and last.usage == whole.usage and not last.token_ids
    assert len({c.id for c in chunks}) == 1 and chunks[0].model == "tiny:1"
    logprobs = [lp for c in chunks for lp in c.logprobs]
    assert [lp.token_id for lp in logprobs] == list(whole.token_ids) == [lp.token_id for lp in whole.logprobs]
    assert all(len(lp.top_logprobs) == 3 and lp.top_logprobs[0].token_id == lp.token_id for lp in logprobs)
    assert all(lp.logprob <= 0 and lp.top_logprobs[0].logprob >= lp.top_logprobs[-1].logprob for lp in logprobs)


def _error(call, request) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        result = call(request)
        if not isinstance(result, pb.InferResponse):
            list(result)  # a stream fails at its first read
    return caught.value


@pytest.mark.parametrize("request_, param, text", [
    (pb.InferRequest(), "input", "set prompt (raw text) or chat"),
    (pb.InferRequest(chat=pb.Conversation()), "chat.messages", "chat.messages is empty"),
    (pb.InferRequest(chat=pb.Conversation(messages=[pb.ChatMessage(role="robot", content="x")])),
     "chat.messages[0].role", "'robot'; use one of system, developer, user, assistant"),
    (pb.InferRequest(prompt="x", sampling=pb.SamplingParams(max_tokens=257)), "sampling.max_tokens", "at most 256"),
    (pb.InferRequest(prompt="x", sampling=pb.SamplingParams(max_tokens=0)), "sampling.max_tokens", "at least 1"),
    (pb.InferRequest(prompt="x", sampling=pb.SamplingParams(logprobs=21)), "sampling.logprobs", "at most 20"),
    (pb.InferRequest(prompt="x" * 2001), "prompt", "2001 characters; this server takes at most 2000"),
    (pb.InferRequest(prompt="x", sampling=pb.SamplingParams(temperature=-1)), None, "temperature"),
    (pb.InferRequest(prompt="x", sampling=pb.SamplingParams(top_p=1.5)), None, "top_p"),
    (pb.InferRequest(prompt="x", sampling=pb.SamplingParams(top_k=2**32 - 1)), "sampling.top_k",
     "sampling.top_k is 4294967295; at most 2147483647"),
    (pb.InferRequest(prompt="x", sampling=pb.SamplingParams(temperature=float("nan"))), None, "temperature"),
])
@pytest.mark.parametrize("streaming", [False, True])
def test_bad_input_is_invalid_argument_naming_the_field(stub, request_, param, text, streaming):
    error = _error(stub.InferStream if streaming else stub.Infer, request_)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and text in error.details()
    if param is not None:
        assert dict(error.trailing_metadata())["x-error-param"] == param


def test_engine_errors_map_like_http_and_the_server_keeps_serving(stub):
    unknown = _error(stub.Infer, pb.InferRequest(model="nope", prompt="x"))
    assert unknown.code() == grpc.StatusCode.NOT_FOUND and "'nope' does not exist" in unknown.details()
    assert dict(unknown.trailing_metadata())["x-error-code"] == "model_not_found"
    too_long = _error(stub.InferStream, pb.InferRequest(prompt="a " * 600, sampling=pb.SamplingParams(max_tokens=4)))
    assert too_long.code() == grpc.StatusCode.INVALID_ARGUMENT and "context holds 256" in too_long.details()
    assert dict(too_long.trailing_metadata())["x-error-code"] == "context_length_exceeded"
    reply = stub.Infer(pb.InferRequest(model="tiny", prompt="still here", sampling=pb.SamplingParams(max_tokens=2)))
    assert reply.usage.completion_tokens == 2


def _wait_for(condition, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_cancelling_the_stream_cancels_the_sequence(server, stub):
    labels = {"model": "tiny", "version": "1", "slo_class": "medium", "finished_reason": "cancelled"}
    before = server.metric("mcp_request_success_total", **labels)
    loop = server.host.current()["tiny"].model.loop
    call = stub.InferStream(pb.InferRequest(prompt="a", sampling=pb.SamplingParams(max_tokens=200, **GREEDY)))
    assert next(call).token_ids and next(call).token_ids
    call.cancel()
    with pytest.raises(grpc.RpcError) as caught:
        list(call)
    assert caught.value.code() == grpc.StatusCode.CANCELLED
    _wait_for(lambda: server.metric("mcp_request_success_total", **labels) == before + 1)
    assert loop.stats().num_running == 0 and loop.stats().num_waiting == 0


def test_a_passed_deadline_cancels_the_sequence(server, stub):
    labels = {"model": "tiny", "version": "1", "slo_class": "medium", "finished_reason": "cancelled"}
    before = server.metric("mcp_request_success_total", **labels)
    request = pb.InferRequest(prompt="a", sampling=pb.SamplingParams(max_tokens=200, **GREEDY))
    with pytest.raises(grpc.RpcError) as caught:  # 200 tokens take ~0.5 s; submitting takes ~10 ms
        stub.Infer(request, timeout=0.15)
    assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    _wait_for(lambda: server.metric("mcp_request_success_total", **labels) == before + 1)


def test_corrupt_or_oversized_messages_are_refused_clearly(grpc_server_factory, tiny_config):
    server = grpc_server_factory(tiny_config(limits={"max_body_bytes": 1000}))
    raw = server.channel().unary_unary("/mcp.v1.InferenceService/Infer")  # bytes in, bytes out
    with pytest.raises(grpc.RpcError) as caught:
        raw(b"\x12\x05ab")  # field 2 (prompt) says 5 bytes, has 2
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "not a valid protobuf message" in caught.value.details() and "mcp.v1.InferRequest" in caught.value.details()
    with pytest.raises(grpc.RpcError) as caught:
        server.stub().Infer(pb.InferRequest(prompt="x" * 2000))
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and "larger than max" in caught.value.details()
    reply = pb.InferResponse.FromString(raw(pb.InferRequest(prompt="ok", sampling=pb.SamplingParams(
        max_tokens=1)).SerializeToString()))
    assert reply.usage.completion_tokens == 1

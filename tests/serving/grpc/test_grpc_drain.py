"""Draining (what SIGTERM starts): health turns NOT_SERVING and its watchers end, new calls are
refused, and the stream in flight runs to its end."""

from __future__ import annotations

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from mcp.serving.grpc._gen import inference_pb2 as pb


def test_drain_lets_the_stream_in_flight_finish(grpc_server_factory, tiny_config):
    server = grpc_server_factory(tiny_config(timeouts={"shutdown_drain_s": 60}))
    watch = health_pb2_grpc.HealthStub(server.channel()).Watch(health_pb2.HealthCheckRequest())
    assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
    stream = server.stub().InferStream(pb.InferRequest(prompt="a", sampling=pb.SamplingParams(
        max_tokens=150, temperature=0.0, ignore_eos=True)))
    chunks = [next(stream)]
    server.grpc.begin_drain()
    assert [m.status for m in watch] == [health_pb2.HealthCheckResponse.NOT_SERVING]  # then the watch ends
    with pytest.raises(grpc.RpcError) as caught:
        server.stub().Infer(pb.InferRequest(prompt="a", sampling=pb.SamplingParams(max_tokens=1)), timeout=10)
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    chunks += list(stream)
    assert chunks[-1].finish_reason == pb.FINISH_REASON_LENGTH and chunks[-1].usage.completion_tokens == 150
    assert len(chunks) == 151
    server.run(server.grpc.stop())  # returns once drained

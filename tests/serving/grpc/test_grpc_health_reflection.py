"""The standard health service (no key needed, live readiness) and server reflection."""

from __future__ import annotations

import grpc
import pytest
from google.protobuf import descriptor_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from mcp.serving.tenants import hash_key


@pytest.fixture(scope="module")
def server(grpc_server_factory, tiny_config):
    return grpc_server_factory(tiny_config(tenants=[{"name": "ops", "key_sha256": [hash_key("k")], "role": "admin"}]))


def test_health_answers_without_a_key(server):
    health = health_pb2_grpc.HealthStub(server.channel())
    for service in ("", "mcp.v1.InferenceService"):
        reply = health.Check(health_pb2.HealthCheckRequest(service=service))
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
    with pytest.raises(grpc.RpcError) as caught:
        health.Check(health_pb2.HealthCheckRequest(service="mcp.v1.Nothing"))
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND and "no service 'mcp.v1.Nothing'" in caught.value.details()
    watch = health.Watch(health_pb2.HealthCheckRequest(service=""))
    assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
    watch.cancel()


def _reflect(channel: grpc.Channel, **query) -> reflection_pb2.ServerReflectionResponse:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    return next(stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(**query)])))


def test_reflection_lists_and_describes_the_service(server):
    channel = server.channel()
    listed = _reflect(channel, list_services="")
    assert {s.name for s in listed.list_services_response.service} == {
        "mcp.v1.InferenceService", "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection",
        "grpc.reflection.v1.ServerReflection"}
    described = _reflect(channel, file_containing_symbol="mcp.v1.InferenceService")
    proto = descriptor_pb2.FileDescriptorProto.FromString(described.file_descriptor_response.file_descriptor_proto[0])
    assert proto.name == "mcp/v1/inference.proto" and proto.package == "mcp.v1"
    methods = {m.name: m.server_streaming for m in proto.service[0].method}
    assert methods == {"Infer": False, "InferStream": True, "Embed": False, "ListModels": False, "LoadModel": False,
                       "SwapModel": False, "UnloadModel": False}


def test_reflection_v1_answers_like_v1alpha(server):
    """A client that asks for grpc.reflection.v1 (grpcurl, Postman) gets the same answers: the
    call is made on v1's method path, its messages being v1alpha's on the wire."""
    channel = server.channel()
    reflect_v1 = channel.stream_stream("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
                                       request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
                                       response_deserializer=reflection_pb2.ServerReflectionResponse.FromString)
    query = reflection_pb2.ServerReflectionRequest(file_containing_symbol="mcp.v1.InferenceService")
    described = next(reflect_v1(iter([query])))
    proto = descriptor_pb2.FileDescriptorProto.FromString(described.file_descriptor_response.file_descriptor_proto[0])
    assert proto.package == "mcp.v1" and {m.name for m in proto.service[0].method} >= {"Infer", "InferStream"}
    listed = next(reflect_v1(iter([reflection_pb2.ServerReflectionRequest(list_services="")])))
    assert "grpc.reflection.v1.ServerReflection" in {s.name for s in listed.list_services_response.service}

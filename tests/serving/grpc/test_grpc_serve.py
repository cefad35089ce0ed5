"""``mcp2026 serve`` with HTTP and gRPC both up, on the real default model: one host, one set of
tenants, limits and metrics behind both APIs; SIGTERM drains the gRPC stream in flight."""

from __future__ import annotations

import signal

import grpc
import httpx
import openai
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from mcp.serving.grpc._gen import inference_pb2 as pb
from mcp.serving.grpc._gen import inference_pb2_grpc as pb_grpc
from mcp.serving.tenants import hash_key

pytestmark = pytest.mark.slow
ADMIN, SMALL = "admin-key", "small-key"
CHAT = [{"role": "user", "content": "Name three colors."}]


def _success_count(server) -> float:
    lines = httpx.get(server.url + "/metrics").text.splitlines()
    return sum(float(line.rsplit(" ", 1)[1]) for line in lines
               if line.startswith("mcp_request_success_total{") and 'model="smollm2"' in line)


def test_http_and_grpc_share_one_server_and_sigterm_drains_grpc(start_server, smollm2_auto_mcp, free_port):
    server = start_server({
        "runtime": {"device": "cpu"},
        "scheduler": {"kv_cache_bytes": 512 * 16 * 46080},
        "serving": {"models": [{"name": "smollm2", "source": str(smollm2_auto_mcp)}],
                    "grpc": {"enabled": True, "port": free_port},
                    "timeouts": {"shutdown_drain_s": 60},
                    "tenants": [{"name": "ops", "key_sha256": [hash_key(ADMIN)], "role": "admin"},
                                {"name": "small", "key_sha256": [hash_key(SMALL)], "requests_per_minute": 2}]},
    })
    assert f"gRPC API (mcp.v1.InferenceService, health, reflection) on 127.0.0.1:{free_port}" in server.log()
    channel = grpc.insecure_channel(f"127.0.0.1:{free_port}")
    stub, admin = pb_grpc.InferenceServiceStub(channel), [("authorization", f"Bearer {ADMIN}")]
    health = health_pb2_grpc.HealthStub(channel)
    assert health.Check(health_pb2.HealthCheckRequest()).status == health_pb2.HealthCheckResponse.SERVING

    # the same greedy answer through both APIs, counted in the one /metrics
    before = _success_count(server)
    http = openai.OpenAI(base_url=server.url + "/v1", api_key=ADMIN, max_retries=0)
    over_http = http.chat.completions.create(model="smollm2", messages=CHAT, max_tokens=12, temperature=0.0)
    conversation = pb.Conversation(messages=[pb.ChatMessage(**m) for m in CHAT])
    over_grpc = stub.Infer(pb.InferRequest(model="smollm2", chat=conversation, sampling=pb.SamplingParams(
        max_tokens=12, temperature=0.0)), metadata=admin)
    assert over_grpc.text == over_http.choices[0].message.content and over_grpc.model == over_http.model
    assert over_grpc.usage.completion_tokens == over_http.usage.completion_tokens
    assert _success_count(server) == before + 2

    # one rate limiter: a tenant's requests per minute count across both APIs
    openai.OpenAI(base_url=server.url + "/v1", api_key=SMALL, max_retries=0).completions.create(
        model="smollm2", prompt="a", max_tokens=1)
    small = [("authorization", f"Bearer {SMALL}")]
    stub.Infer(pb.InferRequest(prompt="a", sampling=pb.SamplingParams(max_tokens=1)), metadata=small)
    with pytest.raises(grpc.RpcError) as caught:
        stub.Infer(pb.InferRequest(prompt="a", sampling=pb.SamplingParams(max_tokens=1)), metadata=small)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert [m.name for m in stub.ListModels(pb.ListModelsRequest(), metadata=admin).models] == ["smollm2"]

    # SIGTERM: health watchers see NOT_SERVING, the stream in flight runs to its end, exit 0
    watch = health.Watch(health_pb2.HealthCheckRequest())
    assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
    stream = stub.InferStream(pb.InferRequest(prompt="Once upon a time", sampling=pb.SamplingParams(
        max_tokens=40, temperature=0.0, ignore_eos=True)), metadata=admin)
    chunks = [next(stream)]
    server.process.send_signal(signal.SIGTERM)
    assert [m.status for m in watch] == [health_pb2.HealthCheckResponse.NOT_SERVING]
    chunks += list(stream)
    assert chunks[-1].usage.completion_tokens == 40 and len(chunks) == 41
    assert server.process.wait(60) == 0
    assert "draining in-flight requests" in server.log()

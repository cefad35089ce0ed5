"""Readiness tells the truth: a real ``mcp2026 serve`` whose model's worker is killed past the
supervisor's give-up limit answers ``/ready`` 503 naming the model, gRPC health NOT_SERVING and
``mcp_worker_up 0``, while ``/health`` (liveness) stays 200; the gateway's active health check
marks the member down. Before the fix, ``/ready`` and gRPC health kept saying ready."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import time

import grpc
import httpx
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from mcp.gateway.metrics import GatewayMetrics
from mcp.gateway.pools.health import check_once
from mcp.gateway.pools.pool import InstancePool
from mcp.gateway.pools.spec import MemberSpec, PoolSpec

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def _grpc_status(port: int, service: str) -> int:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        return stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=10).status


def _member_after_a_check(url: str):
    async def check():
        pool = InstancePool(PoolSpec("engines", (MemberSpec("m1", url),)), httpx.AsyncClient(), GatewayMetrics())
        try:
            await check_once(pool)
        finally:
            await pool.client.aclose()
        return pool.members[0]

    return asyncio.run(check())


def test_a_model_whose_worker_was_given_up_makes_the_server_unready(start_server, tiny_mcp) -> None:
    grpc_port = _free_port()
    server = start_server({
        "runtime": {"device": "cpu", "num_threads": 1},
        "serving": {"models": [{"name": "tiny", "source": str(tiny_mcp)}], "grpc": {"enabled": True, "port": grpc_port},
                    "worker": {"restart_backoff_s": 0.1, "max_restarts_per_minute": 1}},
    })
    assert _grpc_status(grpc_port, "") == health_pb2.HealthCheckResponse.SERVING
    assert _member_after_a_check(server.url).healthy
    os.kill(server.worker_pid("tiny:1"), signal.SIGKILL)
    _wait_for(lambda: server.metric("mcp_worker_restarts_total") == 1, "the first death was not restarted")
    _wait_for(lambda: httpx.get(server.url + "/ready").status_code == 200, "not ready again after the restart")
    os.kill(server.worker_pid("tiny:1"), signal.SIGKILL)  # past max_restarts_per_minute: given up
    _wait_for(lambda: "kept crashing" in httpx.get(server.url + "/ready").text, "the supervisor did not give up")

    ready = httpx.get(server.url + "/ready")
    assert ready.status_code == 503
    assert ready.json()["status"].startswith("not ready: tiny:1: the worker of model tiny:1 kept crashing")
    assert httpx.get(server.url + "/health").json() == {"status": "ok"}  # liveness: the process is fine
    assert server.metric("mcp_worker_up") == 0
    for service in ("", "mcp.v1.InferenceService"):
        assert _grpc_status(grpc_port, service) == health_pb2.HealthCheckResponse.NOT_SERVING
    member = _member_after_a_check(server.url)
    assert not member.healthy and member.last_error == "health check answered 503"
    answer = httpx.post(server.url + "/v1/completions", json={"prompt": "Hi", "max_tokens": 2}, timeout=60)
    assert answer.status_code == 503 and answer.json()["error"]["code"] == "worker_unavailable"

"""Fixtures of the gRPC tests: the real gRPC server in this process, on a free loopback port.

``GrpcServer`` runs on an event loop thread of its own, on the same ``ServerState`` that
``mcp2026 serve`` builds (a real Session, ModelHost, tenants, limiter and metrics); the tests
call it through a real channel with the generated stubs.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import grpc
import pytest

from mcp.config.runtime import config_from_dict
from mcp.runtime.session import Session
from mcp.serving.grpc._gen import inference_pb2_grpc as pb_grpc
from mcp.serving.grpc.server import GrpcServer
from mcp.serving.host import ModelHost
from mcp.serving.state import ServerState
from mcp.serving.tenants import TenantDirectory


class InProcessServer:
    """A gRPC server with its models loaded; ``channel()`` opens a real channel to it."""

    def __init__(self, config: dict) -> None:
        self.config = config_from_dict(config)
        self.session = Session(self.config)
        self.host = ModelHost(self.session)
        self.state = ServerState(self.config, self.host, TenantDirectory(self.config.serving.tenants))
        for spec in self.config.serving.models:
            self.host.load(spec)
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="grpc-test-loop", daemon=True)
        self._thread.start()
        self.grpc = GrpcServer(self.state, "127.0.0.1", 0)
        self.port = self.run(self.grpc.start())
        self.address = f"127.0.0.1:{self.port}"

    def run(self, coroutine):
        """Run ``coroutine`` on the server's loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=120)

    def channel(self) -> grpc.Channel:
        return grpc.insecure_channel(self.address)

    def stub(self) -> pb_grpc.InferenceServiceStub:
        return pb_grpc.InferenceServiceStub(self.channel())

    def metric(self, name: str, **labels: str) -> float:
        return self.state.metrics.registry.get_sample_value(name, labels) or 0.0

    def close(self) -> None:
        self.run(self.grpc.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(30)
        self.host.close()
        self.session.close()


@pytest.fixture(scope="session")
def grpc_server_factory() -> Iterator:
    """``grpc_server_factory(config_dict)`` -> a started InProcessServer; all closed at the end."""
    started: list[InProcessServer] = []

    def start(config: dict) -> InProcessServer:
        server = InProcessServer(config)
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()


@pytest.fixture
def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def tiny_config(tiny_mcp):
    """``tiny_config(**serving)`` -> a config dict: one thread, the tiny model as ``tiny`` version 1,
    and ``serving`` keys on top."""

    def config(**serving) -> dict:
        return {"runtime": {"device": "cpu", "num_threads": 1},
                "serving": {"models": [{"name": "tiny", "source": str(tiny_mcp), "version": "1"}], **serving}}

    return config

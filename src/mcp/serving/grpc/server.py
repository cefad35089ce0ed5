"""The gRPC server of ``mcp2026 serve``: a ``grpc.aio`` server on the HTTP server's event loop.

It serves ``mcp.v1.InferenceService``, ``grpc.health.v1.Health`` and server reflection (v1 and v1alpha), on
the same ``ServerState`` as the HTTP app (one ModelHost, tenants, rate limits, metrics).
Messages are capped at ``serving.limits.max_body_bytes`` like HTTP bodies.

Draining (SIGTERM): ``begin_drain()`` may be called from a signal handler; health turns
NOT_SERVING, new calls are refused (UNAVAILABLE), and calls in flight get up to
``serving.timeouts.shutdown_drain_s`` to finish before they are cancelled.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import grpc
from grpc_health.v1 import health_pb2_grpc

from mcp.base.errors import ConfigError
from mcp.serving.grpc._gen import inference_pb2_grpc as pb_grpc
from mcp.serving.grpc.health import SERVICE_NAME as HEALTH_SERVICE
from mcp.serving.grpc.health import ServingHealth
from mcp.serving.grpc.interceptor import RequestContextInterceptor
from mcp.serving.grpc.reflection import enable_reflection
from mcp.serving.grpc.service import SERVICE_NAME, InferenceServicer

if TYPE_CHECKING:
    from mcp.serving.state import ServerState


class GrpcServer:
    """Start, drain and stop the gRPC API; ``port`` 0 binds any free port (``start`` returns it)."""

    def __init__(self, state: ServerState, host: str, port: int) -> None:
        self._state = state
        self._address = f"{host}:{port}"
        self._server: grpc.aio.Server | None = None
        self._health: ServingHealth | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Task | None = None

    async def start(self) -> int:
        limits = self._state.config.serving.limits
        server = grpc.aio.server(
            interceptors=[RequestContextInterceptor(self._state.tenants)],
            options=[("grpc.max_receive_message_length", limits.max_body_bytes),
                     ("grpc.so_reuseport", 0)])  # a port in use is an error, not a second listener
        pb_grpc.add_InferenceServiceServicer_to_server(InferenceServicer(self._state), server)
        self._health = ServingHealth(self._state.host, (SERVICE_NAME,))
        health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
        enable_reflection((SERVICE_NAME, HEALTH_SERVICE), server)  # v1 and v1alpha
        try:
            port = server.add_insecure_port(self._address)
        except RuntimeError as error:
            raise ConfigError(f"serving.grpc: cannot listen on {self._address} ({error}); "
                              "choose another serving.grpc.port") from None
        await server.start()
        self._server, self._loop = server, asyncio.get_running_loop()
        return port

    def begin_drain(self) -> None:
        """Start draining; safe from a signal handler or another thread, and more than once."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        if self._stopping is None and self._server is not None:
            self._health.drain()
            grace = self._state.config.serving.shutdown_drain_s
            self._stopping = asyncio.ensure_future(self._server.stop(grace))

    async def stop(self) -> None:
        """Drain (if not draining already) and wait until the server has stopped."""
        self._drain()
        if self._stopping is not None:
            await self._stopping

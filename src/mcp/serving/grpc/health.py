"""``grpc.health.v1.Health``, answered from the server's live state.

SERVING once a model is ready (the host has a current version and every loaded model can
serve: ``ModelHost.ready``, what ``/ready`` answers), NOT_SERVING with no model, while a model's
worker is down (restarting, or given up) or while the server drains. The status is computed at
each call rather than set by hand, so a model loaded or unloaded through either API (HTTP or
gRPC), or a worker's crash, shows at once. It answers for the
whole server (``""``) and for ``mcp.v1.InferenceService``; any other name is NOT_FOUND.
A ``Watch`` stream sends each change (checked every ``poll_s``) and ends once the server
drains, after its NOT_SERVING, so that watchers do not hold up the shutdown.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from mcp.serving.host import ModelHost

Status = health_pb2.HealthCheckResponse.ServingStatus
SERVING, NOT_SERVING = health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING
SERVICE_UNKNOWN = health_pb2.HealthCheckResponse.SERVICE_UNKNOWN
SERVICE_NAME = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name


class ServingHealth(health_pb2_grpc.HealthServicer):
    def __init__(self, host: ModelHost, services: tuple[str, ...], poll_s: float = 0.5) -> None:
        self._host = host
        self._services = ("", *services)
        self._poll_s = poll_s
        self._draining = asyncio.Event()

    def drain(self) -> None:
        """From now on every service is NOT_SERVING (call it on the server's event loop)."""
        self._draining.set()

    def status(self, service: str) -> Status:
        if service not in self._services:
            return SERVICE_UNKNOWN
        return NOT_SERVING if self._draining.is_set() or not self._host.ready else SERVING

    async def Check(self, request: health_pb2.HealthCheckRequest,
                    context: grpc.aio.ServicerContext) -> health_pb2.HealthCheckResponse:
        status = self.status(request.service)
        if status == SERVICE_UNKNOWN:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no service {request.service!r} here; ask for "
                                f"'' (the server) or {', '.join(s for s in self._services if s)}")
        return health_pb2.HealthCheckResponse(status=status)

    async def Watch(self, request: health_pb2.HealthCheckRequest,
                    context: grpc.aio.ServicerContext) -> AsyncIterator[health_pb2.HealthCheckResponse]:
        last = None
        while True:
            status = self.status(request.service)
            if status != last:
                yield health_pb2.HealthCheckResponse(status=status)
                last = status
            if self._draining.is_set():
                return
            try:
                await asyncio.wait_for(self._draining.wait(), self._poll_s)
            except TimeoutError:
                pass

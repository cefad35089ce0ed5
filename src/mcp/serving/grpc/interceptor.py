"""The server interceptor that turns a call's metadata into its ``RequestContext``.

It runs for every call of ``mcp.v1`` services, unary and server-streaming alike: it reads and
checks the metadata (``context.read_metadata``) before the handler runs, then either wraps
the handler so that it runs with the context set, or answers the call with the error's
status (UNAUTHENTICATED, PERMISSION_DENIED, INVALID_ARGUMENT) without running it. The
health and reflection services pass through untouched: probes carry no API key.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from mcp.runtime.errors import MCPError
from mcp.serving.grpc import context as request_context
from mcp.serving.grpc.context import RequestContext
from mcp.serving.grpc.status import abort
from mcp.serving.tenants import TenantDirectory

Continuation = Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler | None]]


class RequestContextInterceptor(grpc.aio.ServerInterceptor):
    """Sets ``context.current()`` for each call of the services under ``package``."""

    def __init__(self, tenants: TenantDirectory, package: str = "mcp.v1") -> None:
        self._tenants = tenants
        self._prefix = f"/{package}."

    async def intercept_service(self, continuation: Continuation,
                                details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        handler = await continuation(details)
        if handler is None or not details.method.startswith(self._prefix):
            return handler
        try:
            context = request_context.read_metadata(details.invocation_metadata, self._tenants)
        except MCPError as error:
            return _refusing(handler, error)
        return _with_context(handler, context)


def _with_context(handler: grpc.RpcMethodHandler, context: RequestContext) -> grpc.RpcMethodHandler:
    if handler.unary_unary is not None:
        unary = handler.unary_unary

        async def unary_with_context(request: Any, servicer_context: grpc.aio.ServicerContext) -> Any:
            request_context.enter(context)
            return await unary(request, servicer_context)

        return handler._replace(unary_unary=unary_with_context)
    if handler.unary_stream is not None:
        stream = handler.unary_stream

        async def stream_with_context(request: Any, servicer_context: grpc.aio.ServicerContext) -> AsyncIterator:
            request_context.enter(context)
            async for response in stream(request, servicer_context):
                yield response

        return handler._replace(unary_stream=stream_with_context)
    return handler  # no client-streaming methods in mcp.v1


def _refusing(handler: grpc.RpcMethodHandler, error: MCPError) -> grpc.RpcMethodHandler:
    """The handler, with its behaviour replaced by ending the call with ``error``'s status."""

    async def refuse(request: Any, servicer_context: grpc.aio.ServicerContext) -> None:
        await abort(servicer_context, error)

    if handler.unary_unary is not None:
        return handler._replace(unary_unary=refuse)
    return handler._replace(unary_stream=refuse)

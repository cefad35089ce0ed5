"""The server interceptor that turns a call's metadata into its ``RequestContext``.

It runs for every call of ``mcp.v1`` services, unary and server-streaming alike: it reads and
checks the metadata (``context.read_metadata``) before the handler runs, then either wraps
the handler so that it runs with the context set, or answers the call with the error's
status (UNAUTHENTICATED, PERMISSION_DENIED, INVALID_ARGUMENT) without running it; bytes that
do not parse as the request message are INVALID_ARGUMENT too (grpc alone says UNKNOWN). The
health and reflection services pass through untouched: probes carry no API key.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.message import DecodeError

from mcp.base.errors import MCPError
from mcp.serving.errors import FieldError
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
            outcome: RequestContext | MCPError = request_context.read_metadata(details.invocation_metadata,
                                                                               self._tenants)
        except MCPError as error:
            outcome = error
        return _wrapped(handler, outcome)


@dataclass(frozen=True)
class _MalformedRequest:
    """What the request deserializer gives for bytes that are not a valid message."""

    error: FieldError


def _wrapped(handler: grpc.RpcMethodHandler, outcome: RequestContext | MCPError) -> grpc.RpcMethodHandler:
    """The handler, run with its context set, or ended with the metadata's (or the message's) error."""
    deserialize = _tolerant(handler.request_deserializer)
    if handler.unary_unary is not None:
        unary = handler.unary_unary

        async def unary_with_context(request: Any, servicer_context: grpc.aio.ServicerContext) -> Any:
            await _enter(request, servicer_context, outcome)
            return await unary(request, servicer_context)

        return handler._replace(unary_unary=unary_with_context, request_deserializer=deserialize)
    if handler.unary_stream is not None:
        stream = handler.unary_stream

        async def stream_with_context(request: Any, servicer_context: grpc.aio.ServicerContext) -> AsyncIterator:
            await _enter(request, servicer_context, outcome)
            async with aclosing(stream(request, servicer_context)) as responses:  # closed with this one
                async for response in responses:
                    yield response

        return handler._replace(unary_stream=stream_with_context, request_deserializer=deserialize)
    return handler  # no client-streaming methods in mcp.v1


async def _enter(request: Any, servicer_context: grpc.aio.ServicerContext,
                 outcome: RequestContext | MCPError) -> None:
    if isinstance(outcome, MCPError):
        await abort(servicer_context, outcome)
    if isinstance(request, _MalformedRequest):
        await abort(servicer_context, request.error)
    request_context.enter(outcome)


def _tolerant(deserialize: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    """grpc answers a message it cannot parse with UNKNOWN; this makes it INVALID_ARGUMENT."""
    if deserialize is None:
        return None

    def read(data: bytes) -> Any:
        try:
            return deserialize(data)
        except DecodeError as error:
            return _MalformedRequest(FieldError(f"the request is not a valid protobuf message ({error}); "
                                                "send the method's request type"))

    return read

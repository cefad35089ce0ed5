"""Errors as gRPC statuses: the code ``serving.errors.describe`` gives, the same message as the
HTTP API's, and trailing metadata a client can act on:

    x-error-code   the HTTP API's error ``code`` (context_length_exceeded, rate_limit_exceeded, ...)
    x-error-param  the request field or header at fault, when there is one
    retry-after    whole seconds, with RESOURCE_EXHAUSTED (admission control, rate limits)
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import grpc

from mcp.base.errors import MCPError
from mcp.serving.errors import describe

if TYPE_CHECKING:
    from mcp.serving.metrics import ServingMetrics

logger = logging.getLogger("mcp.serving.grpc")


def code_of(exc: BaseException) -> grpc.StatusCode:
    return grpc.StatusCode[describe(exc).grpc]


def trailing_metadata(exc: BaseException) -> tuple[tuple[str, str], ...]:
    wire = describe(exc)
    pairs = (("x-error-code", wire.code), ("x-error-param", wire.param),
             ("retry-after", None if wire.retry_after_s is None else str(wire.retry_after_s)))
    return tuple((key, value) for key, value in pairs if value is not None)


async def abort(context: grpc.aio.ServicerContext, exc: BaseException) -> None:
    """End the call with the status of ``exc`` (raises grpc's AbortError, which ends the handler);
    a non-MCPError is a bug, logged with its traceback."""
    if not isinstance(exc, MCPError):
        logger.error("unexpected error in a gRPC call", exc_info=exc)
    await context.abort(code_of(exc), describe(exc).message, trailing_metadata(exc))


@asynccontextmanager
async def errors_as_status(context: grpc.aio.ServicerContext,
                           metrics: ServingMetrics | None = None) -> AsyncIterator[None]:
    """Wrap a handler's body: an error raised inside ends the call with its status.

    A cancelled call (``CancelledError``) and an abort already made pass through as they are. A
    refusal (RESOURCE_EXHAUSTED: a rate limit, admission control) is counted on ``metrics`` as
    HTTP's 429s are, in ``mcp_requests_refused{code, transport="grpc"}``.
    """
    try:
        yield
    except grpc.aio.AbortError:
        raise
    except Exception as exc:  # noqa: BLE001 - every error becomes a status; bugs are logged in abort()
        if metrics is not None:
            metrics.count_refusal("grpc", describe(exc))
        await abort(context, exc)

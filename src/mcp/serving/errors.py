"""The one place where an ``MCPError`` becomes a wire status: HTTP here, gRPC beside it.

Errors only the server raises (a bad API key, a rate limit, a body too large) are subclasses
of the same hierarchy, defined here. ``describe(exc)`` gives the HTTP status, OpenAI's error
``type`` and ``code``, the gRPC status name, and a ``Retry-After`` in whole seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mcp.base.errors import (
    CapacityError,
    ConfigError,
    ContextLengthError,
    EngineError,
    InvalidRequestError,
    MCPError,
    ModelFormatError,
    ModelNotFoundError,
    ModelSignatureError,
    PolicyDenied,
    RequestCancelled,
    WorkerUnavailableError,
)


class AuthenticationError(MCPError):
    """No API key, or one that matches no tenant."""


class PermissionDeniedError(PolicyDenied):
    """The key is valid but its role may not do this (an admin endpoint)."""


class RateLimitedError(CapacityError):
    """A tenant went over its requests or tokens per minute."""


class PayloadTooLargeError(InvalidRequestError):
    """The request body is over ``serving.limits.max_body_bytes``."""


class RequestTimeoutError(InvalidRequestError):
    """The client did not send its whole request body within ``serving.timeouts.body_s``."""


class FieldError(InvalidRequestError):
    """A request field is wrong; ``param`` names it (OpenAI's error ``param``)."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class WireError:
    status: int  # HTTP
    type: str  # OpenAI error type
    code: str | None
    grpc: str  # grpc.StatusCode name
    message: str
    param: str | None = None
    retry_after_s: int | None = None  # whole seconds, for the Retry-After header

    def body(self) -> dict:
        """OpenAI's error object: ``{"error": {"message", "type", "param", "code"}}``."""
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


# Most specific first: the first class the error is an instance of decides.
_TABLE: tuple[tuple[type[MCPError], int, str, str | None, str], ...] = (
    (AuthenticationError, 401, "authentication_error", "invalid_api_key", "UNAUTHENTICATED"),
    (PermissionDeniedError, 403, "permission_denied", "forbidden", "PERMISSION_DENIED"),
    (PolicyDenied, 403, "permission_denied", "policy_denied", "PERMISSION_DENIED"),
    (RateLimitedError, 429, "rate_limit_exceeded", "rate_limit_exceeded", "RESOURCE_EXHAUSTED"),
    (CapacityError, 429, "server_overloaded", "over_capacity", "RESOURCE_EXHAUSTED"),
    (PayloadTooLargeError, 413, "invalid_request_error", "payload_too_large", "INVALID_ARGUMENT"),
    (RequestTimeoutError, 408, "invalid_request_error", "request_timeout", "DEADLINE_EXCEEDED"),
    (ContextLengthError, 400, "invalid_request_error", "context_length_exceeded", "INVALID_ARGUMENT"),
    (ModelNotFoundError, 404, "invalid_request_error", "model_not_found", "NOT_FOUND"),
    (InvalidRequestError, 400, "invalid_request_error", None, "INVALID_ARGUMENT"),
    (ConfigError, 400, "invalid_request_error", "bad_config", "INVALID_ARGUMENT"),
    (ModelSignatureError, 403, "permission_denied", "model_signature_refused", "PERMISSION_DENIED"),
    (ModelFormatError, 422, "invalid_request_error", "bad_model_file", "FAILED_PRECONDITION"),
    (RequestCancelled, 503, "server_error", "cancelled", "UNAVAILABLE"),
    (WorkerUnavailableError, 503, "server_error", "worker_unavailable", "UNAVAILABLE"),
    (EngineError, 500, "server_error", "engine_error", "INTERNAL"),
)


def describe(exc: BaseException) -> WireError:
    """How ``exc`` goes on the wire; anything that is not an MCPError is a 500 that hides
    its text (it is a bug: the log has the traceback)."""
    for kind, status, kind_name, code, grpc in _TABLE:
        if isinstance(exc, kind):
            return WireError(status, kind_name, code, grpc, str(exc), getattr(exc, "param", None),
                             _retry_after(exc))
    if isinstance(exc, MCPError):
        return WireError(500, "server_error", None, "INTERNAL", str(exc))
    return WireError(500, "server_error", None, "INTERNAL",
                     "the server failed on this request (a bug, logged); retry, or report it")


def _retry_after(exc: BaseException) -> int | None:
    if not isinstance(exc, (CapacityError, WorkerUnavailableError)):
        return None
    seconds = exc.retry_after_s
    return 1 if seconds is None or not math.isfinite(seconds) else max(1, math.ceil(seconds))

"""The one error mapping: each MCPError's HTTP status, OpenAI type/code, gRPC status, Retry-After."""

from __future__ import annotations

import pytest

from mcp.base.errors import (
    CapacityError,
    ConfigError,
    ContextLengthError,
    EngineError,
    InvalidRequestError,
    ModelNotFoundError,
    PolicyDenied,
    WorkerUnavailableError,
)
from mcp.serving.errors import (
    AuthenticationError,
    FieldError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitedError,
    describe,
)


@pytest.mark.parametrize("error, status, code, grpc", [
    (AuthenticationError("bad key"), 401, "invalid_api_key", "UNAUTHENTICATED"),
    (PermissionDeniedError("not admin"), 403, "forbidden", "PERMISSION_DENIED"),
    (PolicyDenied("policy"), 403, "policy_denied", "PERMISSION_DENIED"),
    (ModelNotFoundError("nope"), 404, "model_not_found", "NOT_FOUND"),
    (ContextLengthError("long"), 400, "context_length_exceeded", "INVALID_ARGUMENT"),
    (InvalidRequestError("bad"), 400, None, "INVALID_ARGUMENT"),
    (ConfigError("dup"), 400, "bad_config", "INVALID_ARGUMENT"),
    (PayloadTooLargeError("big"), 413, "payload_too_large", "INVALID_ARGUMENT"),
    (CapacityError("full", 2.2), 429, "over_capacity", "RESOURCE_EXHAUSTED"),
    (RateLimitedError("slow down", 30.0), 429, "rate_limit_exceeded", "RESOURCE_EXHAUSTED"),
    (EngineError("boom"), 500, "engine_error", "INTERNAL"),
    (WorkerUnavailableError("worker crashed", 1.5), 503, "worker_unavailable", "UNAVAILABLE"),
])
def test_status_code_and_grpc(error, status, code, grpc):
    wire = describe(error)
    assert (wire.status, wire.code, wire.grpc) == (status, code, grpc)
    assert wire.body()["error"]["message"] == str(error)


def test_retry_after_is_whole_seconds_at_least_one():
    assert describe(CapacityError("full", 2.2)).retry_after_s == 3
    assert describe(CapacityError("full", 0.01)).retry_after_s == 1
    assert describe(CapacityError("full")).retry_after_s == 1
    assert describe(InvalidRequestError("x")).retry_after_s is None
    assert describe(WorkerUnavailableError("restarting", 1.5)).retry_after_s == 2


def test_field_errors_name_the_param_and_bugs_hide_their_text():
    assert describe(FieldError("n is 9", "n")).body()["error"]["param"] == "n"
    wire = describe(KeyError("secret internals"))
    assert wire.status == 500 and "secret" not in wire.message

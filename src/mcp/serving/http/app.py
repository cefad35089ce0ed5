"""The FastAPI application: routes, the error format, the body-size limit, the server's state.

Every error leaves as OpenAI's ``{"error": {"message", "type", "param", "code"}}`` with the
status ``serving.errors.describe`` gives; a bug is a 500 whose traceback goes to the log.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from mcp.base.errors import ConfigError, MCPError
from mcp.config.runtime import RuntimeConfig
from mcp.serving.errors import FieldError, PayloadTooLargeError, WireError, describe
from mcp.serving.host import ModelHost
from mcp.serving.metrics import ServingMetrics
from mcp.serving.probe import ProbeWindow
from mcp.serving.tenants import RateLimiter, TenantDirectory

if TYPE_CHECKING:
    from mcp.governance.attestation.attestor import Attestor
    from mcp.governance.plane import GovernancePlane

logger = logging.getLogger("mcp.serving.http")
FAULT_DELAY_ENV = "MCP_FAULT_DELAY_MS"


@dataclass
class ServerState:
    """What the routes share: config, models, tenants, limits, metrics, the governance plane."""

    config: RuntimeConfig
    host: ModelHost
    tenants: TenantDirectory
    limiter: RateLimiter = field(default_factory=RateLimiter)
    probe: ProbeWindow = field(default_factory=ProbeWindow)
    metrics: ServingMetrics | None = None
    draining: bool = False  # SIGTERM received: /ready says no, in-flight requests finish
    fault_delay_s: float = field(default_factory=lambda: fault_delay_from_env())
    governance: GovernancePlane | None = None  # serving.governance: guardrails, audit, traces
    attestation: Attestor | None = None  # the attestation: section: measurement log, GET /attestation

    def __post_init__(self) -> None:
        self.metrics = ServingMetrics(self.host, self.probe)
        if self.governance is not None:
            self.governance.register_metrics(self.metrics.registry)


def fault_delay_from_env() -> float:
    """A chaos/test knob: ``$MCP_FAULT_DELAY_MS`` delays every completion request by that many
    milliseconds before it starts, so a canary instance can be made slow on purpose."""
    text = os.environ.get(FAULT_DELAY_ENV, "").strip()
    if not text:
        return 0.0
    try:
        delay_ms = float(text)
    except ValueError:
        raise ConfigError(f"${FAULT_DELAY_ENV} is {text!r}; give a number of milliseconds, e.g. 500") from None
    if delay_ms < 0:
        raise ConfigError(f"${FAULT_DELAY_ENV} is {text}; give a number of milliseconds >= 0")
    return delay_ms / 1000


def create_app(state: ServerState) -> FastAPI:
    from mcp.serving.http import admin_api, attestation_api, openai_api, ops_api

    app = FastAPI(title="MCP 2026", version="1", summary="OpenAI-compatible inference API")
    app.state.server = state
    for module in (openai_api, admin_api, ops_api, attestation_api):
        app.include_router(module.router)
    app.add_exception_handler(MCPError, _mcp_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected_error)
    app.openapi = lambda: _openapi_without_422(app)
    return BodyLimit(app, state.config.serving.limits.max_body_bytes)


def _openapi_without_422(app: FastAPI) -> dict:
    """FastAPI documents a 422 for every route with parameters; ours answer 400 (OpenAI's code)."""
    if app.openapi_schema is None:
        schema = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
        for path in schema["paths"].values():
            for operation in path.values():
                if operation.get("responses", {}).pop("422", None) is not None:
                    operation["responses"].setdefault("400", {
                        "description": "Bad request",
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}}})
        for name in ("HTTPValidationError", "ValidationError"):
            schema.get("components", {}).get("schemas", {}).pop(name, None)
        app.openapi_schema = schema
    return app.openapi_schema


def error_response(wire: WireError) -> JSONResponse:
    headers = {"Retry-After": str(wire.retry_after_s)} if wire.retry_after_s is not None else None
    return JSONResponse(wire.body(), status_code=wire.status, headers=headers)


async def _mcp_error(request: Request, exc: MCPError) -> JSONResponse:
    return error_response(describe(exc))


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    return error_response(describe(field_error(exc.errors())))


def field_error(errors: list[dict]) -> FieldError:
    """The first problem of a request body, naming its field (``messages.0.content``)."""
    if not errors:
        return FieldError("the request body is not valid")
    error = errors[0]
    where = [str(part) for part in error.get("loc", ()) if part != "body"]
    if error.get("type") == "json_invalid":
        return FieldError(f"the request body is not valid JSON ({error.get('ctx', {}).get('error', 'parse error')}); "
                          "send a JSON object")
    param = ".".join(part for part in where if not _is_union_branch(part)) or None
    if error.get("type") == "missing" and param is None:
        return FieldError("the request body is missing; send a JSON object")
    if error.get("type") == "extra_forbidden":
        return FieldError(f"unknown field {param!r}; see /openapi.json for the accepted fields", param)
    return FieldError(f"field {param or 'body'}: {error.get('msg')}", param)


def _is_union_branch(part: str) -> bool:
    return part in ("str", "int", "float", "bool") or part.startswith(("list[", "literal[", "function-"))


async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    kinds = {404: "not_found", 405: "method_not_allowed"}
    message = f"{request.method} {request.url.path}: {exc.detail}"
    wire = WireError(exc.status_code, "invalid_request_error", kinds.get(exc.status_code), "UNIMPLEMENTED", message)
    return error_response(wire)


async def _unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    logger.exception("unexpected error on %s %s", request.method, request.url.path)
    return error_response(describe(exc))


class BodyLimit:
    """ASGI middleware: a body over ``max_bytes`` is a 413 (by Content-Length, or while read)."""

    def __init__(self, app: FastAPI, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes
        self.state = app.state  # tests and the launcher reach the ServerState through it

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            return await error_response(describe(self._too_large()))(scope, receive, send)
        seen = 0

        async def limited_receive():
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.max_bytes:
                raise self._too_large()
            return message

        await self.app(scope, limited_receive, send)

    def _too_large(self) -> PayloadTooLargeError:
        return PayloadTooLargeError(f"the request body is over {self.max_bytes} bytes "
                                    "(serving.limits.max_body_bytes); send less")

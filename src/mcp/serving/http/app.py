"""The FastAPI application: routes, the error format, the body-size limit, the server's state.

Every error leaves as OpenAI's ``{"error": {"message", "type", "param", "code"}}`` with the
status ``serving.errors.describe`` gives; a bug is a 500 whose traceback goes to the log.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from mcp.runtime.config import RuntimeConfig
from mcp.runtime.errors import ConfigError, InvalidRequestError, MCPError
from mcp.serving.errors import FieldError, PayloadTooLargeError, RequestTimeoutError, WireError, describe
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
    return BodyLimit(app, state.config.serving.limits.max_body_bytes, state.config.serving.body_timeout_s)


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
        _add_links(schema)
        app.openapi_schema = schema
    return app.openapi_schema


# OpenAPI links: how one answer feeds the next request (schemathesis' stateful tests follow them).
_HI = {"max_tokens": 2, "messages": [{"role": "user", "content": "Hi"}]}
LINKS = {
    ("/v1/models", "get"): {
        "ChatWithListedModel": {"operationRef": "#/paths/~1v1~1chat~1completions/post",
                                "requestBody": {**_HI, "model": "$response.body#/data/0/id"}},
        "CompleteWithListedModel": {"operationRef": "#/paths/~1v1~1completions/post",
                                    "requestBody": {"prompt": "Hi", "max_tokens": 2,
                                                    "model": "$response.body#/data/0/id"}}},
    ("/admin/models", "post"): {
        "SwapToLoaded": {"operationRef": "#/paths/~1admin~1models~1{name}~1swap/post",
                         "parameters": {"path.name": "$response.body#/name"},
                         "requestBody": {"version": "$response.body#/version"}},
        "UnloadLoaded": {"operationRef": "#/paths/~1admin~1models~1{name}~1versions~1{version}/delete",
                         "parameters": {"path.name": "$response.body#/name",
                                        "path.version": "$response.body#/version"}}},
}


def _add_links(schema: dict) -> None:
    for (path, method), links in LINKS.items():
        schema["paths"][path][method]["responses"]["200"]["links"] = links


def error_response(wire: WireError, headers: dict[str, str] | None = None, close: bool = False) -> JSONResponse:
    """The error in OpenAI's format; ``close``: end the connection after it (the client may still be
    sending a body nobody reads)."""
    headers = dict(headers or {})
    if wire.retry_after_s is not None:
        headers["Retry-After"] = str(wire.retry_after_s)
    if close:
        headers["Connection"] = "close"
    return JSONResponse(wire.body(), status_code=wire.status, headers=headers or None)


async def _mcp_error(request: Request, exc: MCPError) -> JSONResponse:
    return error_response(describe(exc))


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    return error_response(describe(field_error(exc.errors())))


def field_error(errors: list[dict]) -> FieldError:
    """The first problem of a request body, naming its field (``messages.0.content``)."""
    if not errors:
        return FieldError("the request body is not valid")
    # In a union (`str | list[str]`) the branch of the right shape says what is wrong; the others
    # only say "not a string" / "not a list".
    error = next((e for e in errors if not str(e.get("type", "")).endswith("_type")), errors[0])
    where = [str(part) for part in error.get("loc", ()) if part != "body"]
    if error.get("type") == "json_invalid":
        return FieldError(f"the request body is not valid JSON ({error.get('ctx', {}).get('error', 'parse error')}); "
                          "send a JSON object")
    param = ".".join(part for part in where if not _is_union_branch(part)) or None
    if error.get("type") == "missing" and param is None:
        return FieldError("the request body is missing; send a JSON object")
    if error.get("type") == "extra_forbidden":
        return FieldError(f"unknown field {param!r}; see /openapi.json for the accepted fields", param)
    message = str(error.get("msg")).removeprefix("Value error, ")  # our validators' own words
    return FieldError(f"field {param or 'body'}: {message}", param)


def _is_union_branch(part: str) -> bool:
    return part in ("str", "int", "float", "bool") or part.startswith(("list[", "literal[", "function-"))


async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    kinds = {404: "not_found", 405: "method_not_allowed"}
    message = f"{request.method} {request.url.path}: {exc.detail}"
    wire = WireError(exc.status_code, "invalid_request_error", kinds.get(exc.status_code), "UNIMPLEMENTED", message)
    return error_response(wire, exc.headers)  # a 405 keeps its Allow


async def _unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    logger.exception("unexpected error on %s %s", request.method, request.url.path)
    return error_response(describe(exc))


class BodyLimit:
    """ASGI middleware: the whole body is read before the app runs, so a client cannot hold a
    request open. Over ``max_bytes`` (by Content-Length, or chunked while read) is a 413; a body
    not complete within ``body_timeout_s`` is a 408; both close the connection."""

    keys = ("serving.limits.max_body_bytes", "serving.timeouts.body_s")  # named in the errors

    def __init__(self, app: FastAPI, max_bytes: int, body_timeout_s: float = 30.0) -> None:
        self.app, self.max_bytes, self.body_timeout_s = app, max_bytes, body_timeout_s
        self.state = app.state  # tests and the launcher reach the ServerState through it

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        try:
            if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
                raise self._too_large()
            body = await self._read(receive)
        except InvalidRequestError as exc:
            return await error_response(describe(exc), close=True)(scope, receive, send)
        if body is not None:  # None: the client went away before its body was complete
            await self.app(scope, _replayed(body, receive), send)

    async def _read(self, receive) -> bytes | None:
        chunks, seen = [], 0
        deadline = asyncio.get_running_loop().time() + self.body_timeout_s
        while True:
            try:
                message = await asyncio.wait_for(receive(), deadline - asyncio.get_running_loop().time())
            except TimeoutError:
                raise RequestTimeoutError(f"the request body was not complete within {self.body_timeout_s:g} s "
                                          f"({self.keys[1]}); send it at once") from None
            if message["type"] == "http.disconnect":
                return None
            chunks.append(message.get("body", b""))
            seen += len(chunks[-1])
            if seen > self.max_bytes:
                raise self._too_large()
            if not message.get("more_body", False):
                return b"".join(chunks)

    def _too_large(self) -> PayloadTooLargeError:
        return PayloadTooLargeError(f"the request body is over {self.max_bytes} bytes ({self.keys[0]}); send less")


def _replayed(body: bytes, receive):
    """The ASGI ``receive`` of a body already read: the body once, then the connection's own
    (which tells the app when the client goes away)."""
    pending = True

    async def replay():
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay

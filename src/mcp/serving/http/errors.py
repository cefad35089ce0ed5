"""The HTTP error format, public so that both HTTP fronts (this server's and the gateway's) use it.

Every error leaves as OpenAI's ``{"error": {"message", "type", "param", "code"}}`` with the
status ``serving.errors.describe`` gives; a bug is a 500 whose traceback goes to the log; a body
over the limit is a 413 (``BodyLimit``). ``install_error_handlers`` puts the four handlers on an app.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from mcp.base.errors import MCPError
from mcp.serving.errors import FieldError, PayloadTooLargeError, WireError, describe

logger = logging.getLogger("mcp.serving.http")


def install_error_handlers(app: FastAPI) -> None:
    """Every error an app's routes raise answers in the one error format."""
    app.add_exception_handler(MCPError, mcp_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(Exception, unexpected_error)


def error_response(wire: WireError) -> JSONResponse:
    headers = {"Retry-After": str(wire.retry_after_s)} if wire.retry_after_s is not None else None
    return JSONResponse(wire.body(), status_code=wire.status, headers=headers)


async def mcp_error(request: Request, exc: MCPError) -> JSONResponse:
    return error_response(describe(exc))


async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
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


async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    kinds = {404: "not_found", 405: "method_not_allowed"}
    message = f"{request.method} {request.url.path}: {exc.detail}"
    wire = WireError(exc.status_code, "invalid_request_error", kinds.get(exc.status_code), "UNIMPLEMENTED", message)
    return error_response(wire)


async def unexpected_error(request: Request, exc: Exception) -> JSONResponse:
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

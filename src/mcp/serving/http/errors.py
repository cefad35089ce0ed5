"""The HTTP error format, public so that both HTTP fronts (this server's and the gateway's) use it.

Every error leaves as OpenAI's ``{"error": {"message", "type", "param", "code"}}`` with the
status ``serving.errors.describe`` gives; a bug is a 500 whose traceback goes to the log; a body
over the limit is a 413 and one not complete in time a 408 (``BodyLimit``). ``install_error_handlers`` puts the four handlers on an app.
"""

from __future__ import annotations

import asyncio
import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from mcp.base.errors import InvalidRequestError, MCPError
from mcp.serving.errors import FieldError, PayloadTooLargeError, RequestTimeoutError, WireError, describe

logger = logging.getLogger("mcp.serving.http")


def install_error_handlers(app: FastAPI) -> None:
    """Every error an app's routes raise answers in the one error format."""
    app.add_exception_handler(MCPError, mcp_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(Exception, unexpected_error)


def error_response(wire: WireError, headers: dict[str, str] | None = None, close: bool = False) -> JSONResponse:
    """The error in OpenAI's format; ``close``: end the connection after it (the client may still be
    sending a body nobody reads)."""
    headers = dict(headers or {})
    if wire.retry_after_s is not None:
        headers["Retry-After"] = str(wire.retry_after_s)
    if close:
        headers["Connection"] = "close"
    return JSONResponse(wire.body(), status_code=wire.status, headers=headers or None)


async def mcp_error(request: Request, exc: MCPError) -> JSONResponse:
    wire = describe(exc)
    count_refusal(request, wire)
    return error_response(wire)


def count_refusal(request: Request, wire: WireError) -> None:
    """A 429 counted in ``mcp_requests_refused{code, transport="http"}``, the console's count (an
    app without a server's metrics, the gateway's, has nothing to count on)."""
    metrics = getattr(getattr(request.app.state, "server", None), "metrics", None)
    if metrics is not None:
        metrics.count_refusal("http", wire)


async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
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


async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    kinds = {404: "not_found", 405: "method_not_allowed"}
    message = f"{request.method} {request.url.path}: {exc.detail}"
    wire = WireError(exc.status_code, "invalid_request_error", kinds.get(exc.status_code), "UNIMPLEMENTED", message)
    return error_response(wire, exc.headers)  # a 405 keeps its Allow


async def unexpected_error(request: Request, exc: Exception) -> JSONResponse:
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

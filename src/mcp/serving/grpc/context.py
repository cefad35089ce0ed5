"""The request context of a gRPC call: who calls, which model it asks for, its SLO class.

The interceptor (``interceptor.py``) reads it from the call's metadata, validates every
header, and sets it for the handler; ``current()`` gives it to the service. Each RPC runs
in an asyncio task of its own, so the value lives and dies with that one call.

    authorization: Bearer KEY   the tenant's key (checked unless the server runs open)
    x-tenant-id                 must name the key's tenant; on an open server it names the tenant
    x-model-id                  name or name:version, when the request's ``model`` is empty
    x-model-version             pins a version of that model
    x-sla-class                 critical | high | medium | low
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass

from mcp.base.errors import InvalidRequestError
from mcp.engine.scheduler.slo import SLOClass
from mcp.serving.errors import FieldError
from mcp.serving.tenants import TENANT_ID_HEADER, Caller, TenantDirectory

HEADERS = ("authorization", "x-tenant-id", "x-model-id", "x-model-version", "x-sla-class")
_VERSION = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
_PATTERNS = {
    "x-model-id": re.compile(rf"[A-Za-z0-9][A-Za-z0-9._/-]{{0,127}}(:{_VERSION})?"),
    "x-model-version": re.compile(_VERSION),
}
_SHAPES = {
    "x-model-id": "a model name (letters, digits and . _ / -), optionally :version",
    "x-model-version": "letters, digits and . _ - (at most 64), like 2 or 2025-06-01",
}

Metadata = Sequence[tuple[str, str | bytes]]


@dataclass(frozen=True)
class RequestContext:
    """What one call's metadata says, checked."""

    caller: Caller
    model_id: str | None = None
    model_version: str | None = None
    sla_class: str | None = None  # a valid class name, lowercase; None: the engine's default

    def model_ref(self, requested: str) -> str | None:
        """The model the call asks for, as the host resolves it: the request's ``model``, else
        ``x-model-id``, pinned to ``x-model-version`` when that is sent; None: the default."""
        if requested and self.model_id and requested != self.model_id:
            raise FieldError(f"the request's model {requested!r} and the x-model-id header {self.model_id!r} "
                             "differ; send one of them, or the same in both", "model")
        name = requested or self.model_id
        if self.model_version is None:
            return name
        if name is None:
            raise FieldError("x-model-version needs a model to pin: send x-model-id or the request's model",
                             "x-model-version")
        base, pinned, version = name.partition(":")
        if pinned and version != self.model_version:
            raise FieldError(f"model {name!r} names version {version!r} but x-model-version is "
                             f"{self.model_version!r}; send one version", "x-model-version")
        return f"{base}:{self.model_version}"


_CURRENT: ContextVar[RequestContext] = ContextVar("mcp_grpc_request_context")


def current() -> RequestContext:
    """The context of the call being served (set by the interceptor)."""
    return _CURRENT.get()


def enter(context: RequestContext) -> None:
    """Make ``context`` the current call's (the interceptor calls it in the handler's task)."""
    _CURRENT.set(context)


def read_metadata(metadata: Metadata | None, tenants: TenantDirectory) -> RequestContext:
    """Authenticate the call and check each header; an MCPError names the header at fault."""
    headers = _single_values(metadata or ())
    caller = tenants.authenticate_as(headers.get("authorization"), headers.get(TENANT_ID_HEADER), "metadata")
    return RequestContext(caller, _checked(headers, "x-model-id"), _checked(headers, "x-model-version"),
                          _sla_class(headers.get("x-sla-class")))


def _single_values(metadata: Metadata) -> dict[str, str]:
    """The headers this module reads, each at most once (two values would be ambiguous)."""
    headers: dict[str, str] = {}
    for key, value in metadata:
        key = key.lower()
        if key not in HEADERS:
            continue
        if key in headers:
            raise FieldError(f"metadata {key} is sent more than once; send it once", key)
        headers[key] = value.decode("latin-1") if isinstance(value, bytes) else value
    return headers


def _checked(headers: dict[str, str], key: str) -> str | None:
    value = headers.get(key)
    if value is None:
        return None
    if not _PATTERNS[key].fullmatch(value):
        raise FieldError(f"metadata {key} {value[:80]!r} is malformed; it takes {_SHAPES[key]}", key)
    return value


def _sla_class(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return SLOClass.parse(value).name.lower()
    except InvalidRequestError as error:
        raise FieldError(f"metadata x-sla-class: {error}", "x-sla-class") from None

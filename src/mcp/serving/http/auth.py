"""FastAPI dependencies: the server's state and the calling tenant (``Authorization: Bearer``, or
Anthropic's ``x-api-key`` holding the same key)."""

from __future__ import annotations

from fastapi import Depends, Header, Request

from mcp.serving.errors import FieldError
from mcp.serving.tenants import TENANT_ID, TENANT_ID_HEADER, Caller

# Headers a request may carry once: with two, which one counts would depend on the proxy in front
# (the first here, maybe the last there). gRPC refuses repeated metadata the same way.
SINGLE_HEADERS = ("authorization", "x-api-key", TENANT_ID_HEADER, "x-tenant", "x-sla-class")


def state_of(request: Request):
    """The ``ServerState`` of this app."""
    return request.app.state.server


def caller_of(request: Request, authorization: str | None = Header(None, include_in_schema=False),
              x_api_key: str | None = Header(None, include_in_schema=False),
              x_tenant_id: str | None = Header(None, description="on an open server: the tenant; with keys it "
                                                                 "must name the key's tenant",
                                               json_schema_extra={"pattern": f"^{TENANT_ID.pattern}$"}),
              x_tenant: str | None = Header(None, deprecated=True,
                                            description="an alias of x-tenant-id, ignored when keys are set")) -> Caller:
    """The tenant of the request's API key (401 without a valid one, unless the server runs open).
    ``x-tenant-id`` means what it means over gRPC; the older ``x-tenant`` only names the tenant of
    an open server."""
    check_single_headers(request)
    authorization = bearer_of(authorization, x_api_key)
    tenants = state_of(request).tenants
    if x_tenant_id is not None:
        return tenants.authenticate_as(authorization, x_tenant_id)
    return tenants.authenticate(authorization, x_tenant)


def bearer_of(authorization: str | None, x_api_key: str | None) -> str | None:
    """The request's key as an ``Authorization`` value: ``x-api-key: KEY`` (what the anthropic
    library sends) is ``Bearer KEY``; both headers may come only with the same key."""
    if x_api_key is None:
        return authorization
    if authorization is not None and authorization.partition(" ")[2].strip() != x_api_key.strip():
        raise FieldError("headers authorization and x-api-key hold different keys; send one of them", "x-api-key")
    return f"Bearer {x_api_key.strip()}"


def check_single_headers(request: Request) -> None:
    """A 400 for a header of ``SINGLE_HEADERS`` sent more than once."""
    for name in SINGLE_HEADERS:
        if len(request.headers.getlist(name)) > 1:
            raise FieldError(f"header {name} is sent more than once; send it once", name)


def admin_of(caller: Caller = Depends(caller_of)) -> Caller:
    """Like ``caller_of``, and 403 unless the tenant has the admin role."""
    caller.require_admin()
    return caller

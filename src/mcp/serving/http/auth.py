"""FastAPI dependencies: the server's state and the calling tenant (``Authorization: Bearer``)."""

from __future__ import annotations

from fastapi import Depends, Header, Request

from mcp.serving.tenants import Caller


def state_of(request: Request):
    """The ``ServerState`` of this app."""
    return request.app.state.server


def caller_of(request: Request, authorization: str | None = Header(None, include_in_schema=False),
              x_tenant: str | None = Header(None)) -> Caller:
    """The tenant of the request's API key (401 without a valid one, unless the server runs open)."""
    return state_of(request).tenants.authenticate(authorization, x_tenant)


def admin_of(caller: Caller = Depends(caller_of)) -> Caller:
    """Like ``caller_of``, and 403 unless the tenant has the admin role."""
    caller.require_admin()
    return caller

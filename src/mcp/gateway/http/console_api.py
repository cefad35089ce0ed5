"""``/console`` on ``mcp2026 gateway``: the page (``gateway.html``, the server console's assets)
and the one view the admin API lacks, the registry. Routes, pools and rollouts are read and
driven through ``/admin`` itself (gateway/http/admin_api.py)."""

from __future__ import annotations

import anyio.to_thread
from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from mcp.gateway.http.state import GatewayState
from mcp.serving.console.routes import SECURITY_HEADERS, page_router
from mcp.serving.http.auth import admin_of, caller_of, state_of
from mcp.serving.tenants import Caller

router = APIRouter(include_in_schema=False)
router.include_router(page_router("gateway.html"))


@router.get("/console/api/whoami")
async def whoami(caller: Caller = Depends(caller_of), state: GatewayState = Depends(state_of)) -> JSONResponse:
    return JSONResponse({"tenant": caller.tenant.name, "role": caller.tenant.role,
                         "admin": caller.tenant.role == "admin", "open": state.tenants.open,
                         "registry": state.registry is not None}, headers=SECURITY_HEADERS)


@router.get("/console/api/registry", dependencies=[Depends(admin_of)])
async def registry(state: GatewayState = Depends(state_of)) -> JSONResponse:
    """Every registered version: stage, artifact, signature status and lineage (``registry list``)."""
    if state.registry is None:
        return JSONResponse({"data": [], "note": "this gateway has no registry; set gateway.registry in its config"})
    versions = await anyio.to_thread.run_sync(state.registry.versions)
    return JSONResponse({"data": [_version(v) for v in versions]})


def _version(version) -> dict:
    return {"id": version.model_id, "stage": version.stage.value, "format": version.format,
            "sha256": version.sha256, "size_bytes": version.size_bytes, "quantization": version.quantization,
            "signature_status": version.signature_status, "lineage": version.lineage,
            "created_at": version.created_at.isoformat(), "created_by": version.created_by}

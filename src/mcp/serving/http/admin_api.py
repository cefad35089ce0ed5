"""``/admin/models``: load, swap and unload model versions while traffic flows (admin role).

A load runs in a worker thread and answers once the version is ready (its first token
served); with ``activate`` (the default) it then becomes its name's current version and the
one it replaces drains and unloads. Unloading retires a version: its requests finish first.
"""

from __future__ import annotations

import anyio.to_thread
from fastapi import APIRouter, Depends

from mcp.config.serving import ServedModel
from mcp.serving.host import ModelHost, ModelVersion
from mcp.serving.http import schemas as s
from mcp.serving.http.auth import admin_of, state_of
from mcp.serving.http.openai_api import ERRORS
from mcp.serving.measured import swap_measured
from mcp.serving.state import ServerState

router = APIRouter(prefix="/admin/models", tags=["admin"], dependencies=[Depends(admin_of)], responses=ERRORS)


@router.get("", response_model=s.ModelVersionList)
async def list_versions(state: ServerState = Depends(state_of)) -> s.ModelVersionList:
    return _listing(state.host, state.host.versions())


@router.post("", response_model=s.ModelVersionInfo)
async def load(body: s.LoadModelRequest, state: ServerState = Depends(state_of)) -> s.ModelVersionInfo:
    spec = ServedModel(body.name, body.source, body.version, body.precision)
    loaded = await anyio.to_thread.run_sync(state.host.load_from_admin, spec, body.activate)
    return _info(state.host, loaded)


@router.post("/{name}/swap", response_model=s.ModelVersionInfo)
async def swap(name: str, body: s.SwapModelRequest, state: ServerState = Depends(state_of)) -> s.ModelVersionInfo:
    return _info(state.host, swap_measured(state, name, body.version))


@router.delete("/{name}", response_model=s.ModelVersionList)
async def unload_all(name: str, state: ServerState = Depends(state_of)) -> s.ModelVersionList:
    return _listing(state.host, state.host.unload(name))


@router.delete("/{name}/versions/{version}", response_model=s.ModelVersionList)
async def unload(name: str, version: str, state: ServerState = Depends(state_of)) -> s.ModelVersionList:
    return _listing(state.host, state.host.unload(name, version))


def _listing(host: ModelHost, versions: list[ModelVersion]) -> s.ModelVersionList:
    return s.ModelVersionList(data=[_info(host, v) for v in versions])


def _info(host: ModelHost, version: ModelVersion) -> s.ModelVersionInfo:
    current = host.current().get(version.name)
    return s.ModelVersionInfo(name=version.name, version=version.version, source=version.source,
                              current=current is version, in_flight=version.in_flight,
                              load_to_ready_s=version.load_to_ready_s)

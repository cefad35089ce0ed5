"""``/console/api/models`` and ``/console/api/tenants``: what the admin API and the rate limiter
know, in the shape the pages draw, and each loaded version's memory (``memory_of``). Loading,
swapping and unloading go through ``/admin/models`` itself (the page calls it); these routes
only read.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel

from mcp.config.serving import Tenant
from mcp.engine.engine import NativeEngine
from mcp.runtime.model import Model
from mcp.serving.http.auth import admin_of, caller_of, state_of
from mcp.serving.host import ModelVersion
from mcp.serving.state import ServerState
from mcp.serving.tenants import OPEN_TENANT, Caller

KEY_PREFIX_CHARS = 12  # how much of a key's sha256 the tenants page shows

router = APIRouter(prefix="/console/api", include_in_schema=False)


class VersionView(BaseModel):
    name: str
    version: str
    source: str
    current: bool
    file: str
    file_bytes: int | None
    memory_bytes: int | None  # what the loaded version holds in memory now, as memory_measure says
    memory_measure: Literal["worker_rss", "weights"]  # its worker process's RSS, or (in process) its weights
    weight_bytes: int | None  # its weight tensors, each once (file-mapped ones included)
    precision: str
    plan: dict[str, int]  # kernel or precision -> number of tensors
    in_flight: int
    load_to_ready_s: float
    loaded_at: float


class TenantView(BaseModel):
    name: str
    role: str
    key_prefixes: list[str]
    requests_per_minute: int | None
    tokens_per_minute: int | None
    requests_last_minute: int
    tokens_last_minute: int
    refused: int


@router.get("/models", dependencies=[Depends(admin_of)])
async def models(state: ServerState = Depends(state_of)) -> list[VersionView]:
    current = {version.key for version in state.host.current().values()}
    return [_version_view(version, version.key in current) for version in state.host.versions()]


def _version_view(version: ModelVersion, current: bool) -> VersionView:
    model = version.model
    path = Path(model.path)
    memory_bytes, measure, weight_bytes = memory_of(model)
    return VersionView(name=version.name, version=version.version, source=version.source, current=current,
                       file=str(path), file_bytes=path.stat().st_size if path.is_file() else None,
                       memory_bytes=memory_bytes, memory_measure=measure, weight_bytes=weight_bytes,
                       precision=model.precision, plan=dict(Counter(model.precision_plan.values())),
                       in_flight=version.in_flight, load_to_ready_s=version.load_to_ready_s,
                       loaded_at=version.loaded_at)


def memory_of(model: Model) -> tuple[int | None, Literal["worker_rss", "weights"], int | None]:
    """What a loaded version holds in memory: with worker isolation its worker process's resident
    memory (weights, KV cache, interpreter: the process exists for this version alone), else its
    weight tensors (the server process's RSS is every version's and the server's together)."""
    from mcp.serving.isolation.models import worker_report, worker_rss_bytes

    report = worker_report(model)
    if report is not None:
        return worker_rss_bytes(model), "worker_rss", report.get("weight_bytes")
    engine = model.engine
    weight_bytes = engine.weight_memory().weight_bytes if isinstance(engine, NativeEngine) else None
    return weight_bytes, "weights", weight_bytes


@router.get("/tenants")
async def tenants(caller: Caller = Depends(caller_of), state: ServerState = Depends(state_of)) -> list[TenantView]:
    """Every tenant for an admin; a tenant's own row for anyone else. Keys as their hash prefix only."""
    known = state.config.serving.tenants or (OPEN_TENANT,)
    if caller.tenant.role != "admin":
        known = tuple(t for t in known if t.name == caller.tenant.name)
    return [_tenant_view(tenant, state) for tenant in known]


def _tenant_view(tenant: Tenant, state: ServerState) -> TenantView:
    usage = state.limiter.usage(tenant.name)
    return TenantView(name=tenant.name, role=tenant.role,
                      key_prefixes=[digest[:KEY_PREFIX_CHARS] for digest in tenant.key_sha256],
                      requests_per_minute=tenant.requests_per_minute, tokens_per_minute=tenant.tokens_per_minute,
                      requests_last_minute=usage.num_requests, tokens_last_minute=usage.num_tokens,
                      refused=usage.num_refused)

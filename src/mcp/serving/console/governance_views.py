"""``/console/api/audit`` and ``/console/api/compliance``: the audit trail and the compliance report
of the running server, through the governance functions the CLI uses (``find_records``,
``verify``, ``erase_subject``, ``build_report``, ``create_bundle``).

A tenant's key lists that tenant's records only; the chain check, erasure and compliance are
for admins. Database work runs in a worker thread: the event loop keeps serving meanwhile.
"""

from __future__ import annotations

import secrets
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import anyio.to_thread
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, Field

from mcp.base.errors import InvalidRequestError
from mcp.governance.errors import AuditError
from mcp.serving.errors import AuthenticationError
from mcp.serving.console.routes import SECURITY_HEADERS
from mcp.serving.http.auth import admin_of, caller_of, state_of
from mcp.serving.state import ServerState
from mcp.serving.tenants import Caller

router = APIRouter(prefix="/console/api", include_in_schema=False)
LINK_TTL_S = 60.0
REPORT_CSP = SECURITY_HEADERS | {"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
                                                            "frame-ancestors 'self'", "X-Frame-Options": "SAMEORIGIN"}


class EraseRequest(BaseModel):
    tenant: str = Field(min_length=1, max_length=200)
    user: str = Field(min_length=1, max_length=500)


class BundleRequest(BaseModel):
    model: str = Field(min_length=1, max_length=200, description="a loaded model's name or name:version")


def _audit_log(state: ServerState):
    if state.governance is None or state.governance.audit is None:
        raise AuditError("the audit trail is off on this server; add serving.governance (audit: true) "
                         "to its config (docs/governance.md)")
    return state.governance.audit


@router.get("/audit")
async def records(caller: Caller = Depends(caller_of), state: ServerState = Depends(state_of),
                  tenant: str | None = None, status: str | None = None, decision: str | None = None,
                  model: str | None = None, since: float | None = Query(None, description="unix seconds"),
                  until: float | None = Query(None, description="unix seconds"),
                  limit: int = 100) -> JSONResponse:
    """Records newest first; a tenant's key sees its own tenant's only, whatever it asks."""
    from mcp.governance.audit.search import RecordQuery, find_records

    if caller.tenant.role != "admin":
        if tenant is not None and tenant != caller.tenant.name:
            raise InvalidRequestError(f"tenant {tenant[:80]!r}: a tenant's key lists its own records only "
                                      f"(tenant {caller.tenant.name!r})")
        tenant = caller.tenant.name
    query = RecordQuery(tenant or None, status or None, decision or None, model or None, _us(since), _us(until),
                        limit)
    found = await anyio.to_thread.run_sync(find_records, _audit_log(state).engine, query)
    return JSONResponse({"data": [asdict(record) for record in found]})


def _us(seconds: float | None) -> int | None:
    return None if seconds is None else int(seconds * 1e6)


@router.post("/audit/verify", dependencies=[Depends(admin_of)])
async def verify_chain(state: ServerState = Depends(state_of)) -> JSONResponse:
    """Walk the whole chain (``mcp2026 audit verify``) and say what was tampered with."""
    from mcp.governance.audit.verify import verify

    report = await anyio.to_thread.run_sync(verify, _audit_log(state).engine)
    return JSONResponse({"ok": report.ok, "num_records": report.num_records, "head_seq": report.head_seq,
                         "head_hash": report.head_hash, "problems": report.problems})


@router.post("/audit/erase", dependencies=[Depends(admin_of)])
async def erase(body: EraseRequest, state: ServerState = Depends(state_of)) -> JSONResponse:
    """Erase a tenant's user (``mcp2026 audit erase``): its key and captures go, its records stay."""
    from mcp.governance.audit.maintenance import erase_subject

    audit = _audit_log(state)
    result = await anyio.to_thread.run_sync(erase_subject, audit.engine, audit.keys.subject(body.tenant, body.user))
    return JSONResponse(asdict(result))


@router.get("/compliance/report", dependencies=[Depends(admin_of)])
async def report_html(state: ServerState = Depends(state_of), framework: str = "all") -> HTMLResponse:
    """The live report as ``mcp2026 compliance report --format html`` writes it."""
    return await _report_response(state, framework)


@router.post("/compliance/report-link", dependencies=[Depends(admin_of)])
async def report_link(request: Request, framework: str = "all") -> JSONResponse:
    """A one-use address of the report, good for ``LINK_TTL_S``: a frame cannot send the key, so
    the page asks for this link with it and shows the report in place."""
    _clauses(_graph(), framework)
    links = _links(request)
    now = time.monotonic()
    for token in [t for t, (expires, _) in links.items() if expires < now]:
        del links[token]
    token = secrets.token_urlsafe(24)
    links[token] = (now + LINK_TTL_S, framework)
    return JSONResponse({"url": f"/console/api/compliance/report/{token}", "expires_in_s": LINK_TTL_S})


@router.get("/compliance/report/{token}")
async def report_by_link(token: str, request: Request, state: ServerState = Depends(state_of)) -> HTMLResponse:
    found = _links(request).pop(token, None)
    if found is None or found[0] < time.monotonic():
        raise AuthenticationError("this report link is unknown, used or expired; open the compliance page again")
    return await _report_response(state, found[1])


def _links(request: Request) -> dict[str, tuple[float, str]]:
    if getattr(request.app.state, "console_report_links", None) is None:
        request.app.state.console_report_links = {}
    return request.app.state.console_report_links


async def _report_response(state: ServerState, framework: str) -> HTMLResponse:
    from mcp.governance.compliance.report import render_html

    report = await anyio.to_thread.run_sync(_build_report, state, framework)
    return HTMLResponse(render_html(report), headers=REPORT_CSP)


@router.get("/compliance/gaps", dependencies=[Depends(admin_of)])
async def gaps(state: ServerState = Depends(state_of), framework: str = "all") -> JSONResponse:
    """The applicable clauses of the graph that no control covers, and the concepts missing."""
    from mcp.governance.compliance.loader import load_graph

    graph = load_graph()
    found = [{"id": clause.id, "framework": clause.framework, "article": clause.article, "title": clause.title,
              "concepts": [concept for concept in clause.concepts
                           if not any(concept in c.satisfies for c in graph.controls.values())]}
             for clause in _clauses(graph, framework) if clause.not_applicable is None]
    return JSONResponse({"data": [clause for clause in found if clause["concepts"]]})


def _clauses(graph, framework: str):
    from mcp.governance.compliance.errors import ComplianceReportError

    try:
        return graph.clauses_of(framework)
    except (ComplianceReportError, KeyError):
        raise InvalidRequestError(f"framework {framework[:40]!r} is unknown; give all, gdpr, ccpa, cn-genai "
                                  "or eu-ai-act") from None


@router.post("/compliance/bundle", dependencies=[Depends(admin_of)])
async def bundle(body: BundleRequest, state: ServerState = Depends(state_of)) -> Response:
    """A signed evidence bundle (``mcp2026 evidence create``) of a loaded model's file, with the live report."""
    with state.host.acquire(body.model) as version:
        path = Path(version.model.path)
        data = await anyio.to_thread.run_sync(_bundle_bytes, state, path)
    name = f"{version.name}-{version.version}.ceb"
    return Response(data, media_type="application/zip",
                    headers={**SECURITY_HEADERS, "Content-Disposition": f'attachment; filename="{name}"'})


def _bundle_bytes(state: ServerState, model_path: Path) -> bytes:
    from mcp.governance.evidence.bundle import create_bundle
    from mcp.governance.signing.keys import default_identity, load_identity

    signing = state.config.signing
    identity = (load_identity(signing.key_file, signing.cert_file, signing.chain_file)
                if signing.key_file is not None else default_identity())
    report = _build_report(state, "all").to_json()
    with tempfile.TemporaryDirectory(prefix="mcp-console-") as folder:
        out = Path(folder) / "bundle.ceb"
        create_bundle(model_path, out, identity, report, signing.tsa_url)
        return out.read_bytes()


def _build_report(state: ServerState, framework: str):
    from mcp.governance.compliance.context import EvidenceContext, ReportPeriod
    from mcp.governance.compliance.report import build_report

    _clauses(_graph(), framework)
    context = EvidenceContext(state.config, "the running server's config", ReportPeriod.parse())
    try:
        return build_report(context, framework)
    finally:
        context.close()


def _graph():
    from mcp.governance.compliance.loader import load_graph

    return load_graph()

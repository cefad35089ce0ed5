"""Evidence from the serving config: tenants' API keys, trace export."""

from __future__ import annotations

from mcp.governance.compliance.context import EvidenceContext
from mcp.governance.compliance.status import ControlResult, Status, result


def tenant_keys(context: EvidenceContext) -> ControlResult:
    tenants = context.config.serving.tenants
    if not tenants:
        return result(Status.NOT_MET, f"{context.source}: serving.tenants is empty: the server answers any caller "
                                      "without an API key")
    limited = [t.name for t in tenants if t.requests_per_minute or t.tokens_per_minute]
    admins = [t.name for t in tenants if t.role == "admin"]
    return result(Status.MET,
                  f"{len(tenants)} tenant(s) authenticate with API keys stored as sha256 digests "
                  f"({sum(len(t.key_sha256) for t in tenants)} key(s)): {', '.join(t.name for t in tenants)}",
                  f"rate limits on {len(limited)} tenant(s){': ' + ', '.join(limited) if limited else ''}; "
                  f"admin role: {', '.join(admins) or 'none'}")


def trace_export(context: EvidenceContext) -> ControlResult:
    governance = context.governance
    if governance is None:
        return result(Status.NOT_MET, f"{context.source}: no serving.governance section: no spans are made")
    if not governance.otlp_endpoint:
        return result(Status.NOT_MET, f"{context.source}: serving.governance.otlp_endpoint is not set: spans are "
                                      "made but not exported for operators to watch")
    return result(Status.MET, f"one span per inference exported over OTLP/HTTP to {governance.otlp_endpoint}")

"""Evidence queries: one function per control, ``query(context) -> ControlResult``.

Each reads the live system through the ``EvidenceContext`` (the audit database, the policy
bundle, the model files, the config) and says what it found. A control's ``evidence`` field
in controls.yaml names its query here. An ``MCPError`` a query raises (a database that does
not answer, a bundle that does not compile) makes the control "not met" with that message.
"""

from __future__ import annotations

from collections.abc import Callable

from mcp.governance.compliance.context import EvidenceContext
from mcp.governance.compliance.queries import audit, models, policy, serving
from mcp.governance.compliance.status import ControlResult

EvidenceQuery = Callable[[EvidenceContext], ControlResult]

EVIDENCE_QUERIES: dict[str, EvidenceQuery] = {
    "audit_chain": audit.audit_chain,
    "retention_schedule": audit.retention_schedule,
    "retention_minimum": audit.retention_minimum,
    "erasures_honoured": audit.erasures_honoured,
    "subject_export": audit.subject_export,
    "pseudonymous_subjects": audit.pseudonymous_subjects,
    "capture_encryption": audit.capture_encryption,
    "output_provenance": audit.output_provenance,
    "policy_bundle": policy.policy_bundle,
    "pii_redaction_policy": policy.pii_redaction_policy,
    "input_guardrail_policy": policy.input_guardrail_policy,
    "output_moderation_policy": policy.output_moderation_policy,
    "trace_export": serving.trace_export,
    "tenant_keys": serving.tenant_keys,
    "model_lineage": models.model_lineage,
    "model_signatures": models.model_signatures,
    "data_lineage": models.data_lineage,
}

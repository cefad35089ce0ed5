"""The governance plane's Prometheus metrics, registered on the server's registry (``/metrics``).

- ``mcp_policy_decisions_total{stage, action, rule}``: one per decision and rule that fired
  (``rule=""`` for an allow); rule ids come from the policy bundle, so the label is bounded.
- ``mcp_audit_records_total{status}``: audit records written (``status`` as the record's:
  ok, denied, stopped, cancelled, error:...).
- ``mcp_audit_write_lag_seconds``: from handing a record to the audit log to its commit, the
  time a response waits for its record.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

from mcp.governance.policy.decision import Decision

LAG_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class GovernanceMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.decisions = Counter("mcp_policy_decisions", "Policy decisions, by stage, action and rule that fired",
                                 ("stage", "action", "rule"), registry=registry)
        self.audit_records = Counter("mcp_audit_records", "Audit records written, by status", ("status",),
                                     registry=registry)
        self.audit_lag = Histogram("mcp_audit_write_lag_seconds", "From submitting an audit record to its commit",
                                   buckets=LAG_BUCKETS, registry=registry)

    def decided(self, decision: Decision) -> None:
        record = decision.as_record()
        for rule in record["rules"] or [""]:
            self.decisions.labels(record["stage"], record["action"], rule).inc()

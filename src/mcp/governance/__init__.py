"""The governance plane: detectors, Rego policies, the audit trail, traces.

Subpackages: ``detectors`` (PII, secrets, prompt-injection markers, a term list: the
``input.findings`` of a policy), ``policy`` (Rego bundles evaluated with regopy, or an OPA
server), ``audit`` (a hash-chained, append-only record per request, with encrypted capture
and erasure), ``tracing`` (OpenTelemetry spans). ``plane.GovernancePlane`` joins them into
the one object the serving layer (HTTP and gRPC alike) calls. Nothing here knows of HTTP.
"""

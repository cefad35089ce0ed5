"""Evidence from the policy engine: the bundle and its version, and what it decides on probes.

The probes are short texts run through the real detectors and the real policy, as the
server runs a request: an output with an e-mail address and a phone number (must be
redacted), an input with a private key and one with a US social security number (must be
refused), an output carrying a credential (must be stopped).
"""

from __future__ import annotations

import json
from collections import Counter

from sqlalchemy import select

from mcp.governance.compliance.context import EvidenceContext
from mcp.governance.compliance.status import ControlResult, Status, result

PROBE_TENANT = "compliance-probe"
PII_OUTPUT = "You can reach Jane at jane.doe@example.com or +1 415 555 0134."
SECRET_INPUT = "Use this key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----"
ID_NUMBER_INPUT = "My social security number is 123-45-6789."
SECRET_OUTPUT = "Sure, the key is AKIAIOSFODNN7EXAMPLE."


def policy_bundle(context: EvidenceContext) -> ControlResult:
    if (off := _no_policy(context)) is not None:
        return off
    engine = context.policy_engine
    facts = [_describe_engine(context, engine)]
    if not context.audit_on:
        return result(Status.PARTLY, *facts, "the audit trail is off: decisions and their policy versions are not kept")
    versions = _decided_versions(context)
    if versions:
        facts.append("decisions from " + context.period.describe() + " by version(s): " +
                     ", ".join(f"{v[:12]} ({n} records)" for v, n in versions.most_common()))
    else:
        facts.append(f"no decision recorded from {context.period.describe()}")
    return result(Status.MET, *facts)


def pii_redaction_policy(context: EvidenceContext) -> ControlResult:
    if (off := _no_policy(context)) is not None:
        return off
    decision = _decide(context, "output", PII_OUTPUT)
    kinds = sorted(decision.redact_kinds)
    if decision.action == "redact" and {"email", "phone"} <= decision.redact_kinds:
        return result(Status.MET, f"probe: an output with an e-mail address and a phone number is redacted "
                                  f"({', '.join(kinds)}; rule {_rules(decision)}) under policy version "
                                  f"{decision.policy_version[:12]}")
    if decision.action in ("redact", "deny"):
        return result(Status.PARTLY, f"probe: an output with an e-mail address and a phone number gets "
                                     f"{decision.action} (kinds {', '.join(kinds) or 'none'}; "
                                     f"rule {_rules(decision)}): "
                                     "not every kind of personal data is redacted")
    return result(Status.NOT_MET, f"probe: an output with an e-mail address and a phone number is let through "
                                  f"(action {decision.action}) by policy version {decision.policy_version[:12]}")


def input_guardrail_policy(context: EvidenceContext) -> ControlResult:
    if (off := _no_policy(context)) is not None:
        return off
    probes = {"a private key": SECRET_INPUT, "a US social security number": ID_NUMBER_INPUT}
    decisions = {name: _decide(context, "input", text) for name, text in probes.items()}
    facts = [f"probe: a prompt with {name} → {d.action}" + (f" (rule {_rules(d)})" if d.action != "allow" else "")
             for name, d in decisions.items()]
    refused = [name for name, d in decisions.items() if d.action == "deny"]
    status = Status.MET if len(refused) == len(probes) else Status.PARTLY if refused else Status.NOT_MET
    return result(status, *facts)


def output_moderation_policy(context: EvidenceContext) -> ControlResult:
    if (off := _no_policy(context)) is not None:
        return off
    decision = _decide(context, "output", SECRET_OUTPUT)
    terms = context.governance.terms
    term_fact = (f"{len(terms)} term(s) in serving.governance.terms are detected for the policies" if terms
                 else "serving.governance.terms is empty: no term list is checked")
    if decision.action != "deny":
        return result(Status.NOT_MET, f"probe: an output carrying a credential is not stopped (action "
                                      f"{decision.action})", term_fact)
    return result(Status.MET, f"probe: an output carrying a credential is stopped (rule {_rules(decision)}; the "
                              "client gets finish_reason content_filter, the record status stopped)", term_fact)


def _no_policy(context: EvidenceContext) -> ControlResult | None:
    if context.governance is None:
        return result(Status.NOT_MET, f"{context.source}: no serving.governance section: no policy checks requests")
    return None


def _decide(context: EvidenceContext, stage: str, text: str):
    from mcp.governance.detectors.scanner import Scanner
    from mcp.governance.plane import policy_findings

    findings = Scanner(context.governance.terms).scan(text)
    request = {"id": f"{PROBE_TENANT}-{stage}", "operation": "chat"}
    if stage == "input":
        request |= {"max_tokens": 16, "num_chars": len(text)}
    document = {"stage": stage, "request": request, "tenant": {"name": PROBE_TENANT}, "user": None,
                "model": {"requested": ""}, "findings": policy_findings(findings)}
    return context.policy_engine.evaluate(stage, document)


def _rules(decision) -> str:
    return ", ".join(decision.as_record()["rules"]) or "none"


def _describe_engine(context: EvidenceContext, engine) -> str:
    from mcp.governance.policy.bundle import SHIPPED

    if context.governance.opa_url:
        return f"policies decided by the OPA server {context.governance.opa_url} (version {engine.version})"
    source = engine.policy.source
    which = "the shipped bundle" if source.folder.resolve() == SHIPPED.resolve() else f"bundle {source.folder}"
    return (f"{which} active, version {engine.version}; modules: {', '.join(sorted(source.modules))}; "
            f"{len(source.tests)} test module(s)")


def _decided_versions(context: EvidenceContext) -> Counter:
    from mcp.governance.audit import schema
    from mcp.governance.compliance.queries.audit import records_in_period

    versions: Counter = Counter()
    with context.audit_engine.connect() as connection:
        query = select(schema.records.c.decisions).where(*records_in_period(context))
        for decisions in connection.execute(query).scalars():
            versions.update({d.get("policy_version", "?") for d in json.loads(decisions)})
    return versions

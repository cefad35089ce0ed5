"""The live report on SQLite and PostgreSQL: with every control on, the clauses the system
covers are met, with the evidence behind them; switching a control off (audit, retention, a
policy, an erasure undone, the chain edited) moves exactly the clauses it serves, and the JSON
says why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import text

from mcp.governance.audit.database import open_audit_engine
from mcp.governance.compliance.context import EvidenceContext, ReportPeriod
from mcp.governance.compliance.errors import ComplianceReportError
from mcp.governance.compliance.report import build_report


def _report(config: Path, framework: str = "all", period: ReportPeriod | None = None) -> dict:
    with EvidenceContext.from_config_file(config, period) as context:
        return build_report(context, framework).to_json()


def _clause(report: dict, clause_id: str) -> dict:
    return next(c for c in report["clauses"] if c["id"] == clause_id)


def _facts(report: dict, clause_id: str, control: str | None = None) -> str:
    items = [e for e in _clause(report, clause_id)["evidence"] if control is None or e["control"] == control]
    return "\n".join(fact for item in items for fact in item["facts"])


def test_all_controls_on(write_config, system) -> None:
    report = _report(write_config())
    assert report["schema"] == "mcp2026.compliance-report/1" and report["framework"] == "all"
    assert report["period"]["since"] is None and report["config"].endswith("mcp-config.yaml")
    statuses = {c["id"]: c["status"] for c in report["clauses"]}
    for clause_id in ("gdpr-15", "gdpr-17", "gdpr-20", "gdpr-25", "gdpr-30", "ccpa-1798.105",
                      "ccpa-1798.121", "ccpa-1798.130", "ccpa-1798.150", "eu-ai-act-12", "eu-ai-act-14",
                      "eu-ai-act-19", "eu-ai-act-26-6"):
        assert statuses[clause_id] == "met", (clause_id, _clause(report, clause_id)["evidence"])
    assert statuses["ccpa-1798.140"] == "not applicable"
    assert statuses["gdpr-6"] == "not met" and statuses["gdpr-35"] == "not met"  # gaps: no control
    assert statuses["cn-genai-11"] == "partly"  # rectification has no control
    assert statuses["eu-ai-act-50"] == "partly" and statuses["cn-genai-12"] == "partly"  # no in-text label
    assert statuses["eu-ai-act-13"] == "partly"  # model documented, no notice at collection
    assert statuses["gdpr-32"] == "partly"  # the model's signature is there but not verified
    assert sum(report["summary"].values()) == len(report["clauses"]) == 41
    chain = _facts(report, "eu-ai-act-12", "audit_trail")
    assert "audit chain in" in chain and "verified: 4 records" in chain
    assert f"1 erasure(s) registered" in _facts(report, "gdpr-17")
    assert f"latest: subject {system['bob']}" in _facts(report, "gdpr-17")
    assert "no control of MCP 2026 covers lawful basis for processing (LawfulBasis)" in _facts(report, "gdpr-6")
    assert "is redacted (email, phone; rule output.redact_pii)" in _facts(report, "gdpr-25", "pii_redaction")
    secrets = _facts(report, "ccpa-1798.121", "input_guardrails")
    assert "a private key → deny (rule input.credentials)" in secrets
    assert "a US social security number → deny (rule input.id_numbers)" in secrets
    lineage = _facts(report, "eu-ai-act-53", "model_lineage")
    assert "tiny:1: tiny.mcp compiled from" in lineage and "sha256" in lineage
    assert _clause(report, "eu-ai-act-53")["status"] == "partly"  # training data: a gap
    signature = next(c for c in report["controls"] if c["id"] == "model_signing")
    assert signature["status"] == "partly"
    assert "signature tiny.mcp.sig present, not verified" in signature["evidence"][0]
    assert "gdpr-17" in next(c for c in report["controls"] if c["id"] == "crypto_erasure")["clauses"]


def test_audit_switched_off(write_config) -> None:
    report = _report(write_config(audit=False))
    assert _clause(report, "gdpr-17")["status"] == "not met"
    assert _clause(report, "eu-ai-act-26-6")["status"] == "not met"
    assert _clause(report, "eu-ai-act-12")["status"] == "partly"  # policies still decide, nothing is kept
    assert "serving.governance.audit is false: no audit trail is kept" in _facts(report, "eu-ai-act-12", "audit_trail")
    assert "decisions and their policy versions are not kept" in _facts(report, "eu-ai-act-12", "policy_versioning")
    report = _report(write_config(governance=False, tenants=False), "gdpr")
    partly = {c["id"] for c in report["clauses"] if c["status"] != "not met"}
    assert partly == {"gdpr-32"}  # only the model's signature file is left of its controls
    assert "serving.tenants is empty" in _facts(report, "gdpr-32", "access_control")


def test_retention_unset_and_too_short(write_config) -> None:
    report = _report(write_config(retention_days=None))
    assert _clause(report, "gdpr-5")["status"] == "partly" and _clause(report, "ccpa-1798.100")["status"] == "partly"
    assert "retention_days is not set: audit records are kept forever" in _facts(report, "gdpr-5", "log_retention")
    assert _clause(report, "eu-ai-act-19")["status"] == "met"  # never pruned: kept six months and more
    report = _report(write_config(retention_days=30))
    assert _clause(report, "eu-ai-act-26-6")["status"] == "partly"
    assert "retention_days is 30, under the 183 days" in _facts(report, "eu-ai-act-26-6", "log_retention_minimum")


def test_a_policy_removed_from_the_bundle(write_config, system) -> None:
    (system["policies"] / "output.rego").unlink()
    (system["policies"] / "output_test.rego").unlink()
    report = _report(write_config())
    assert _clause(report, "gdpr-25")["status"] == "partly"
    assert "is let through (action allow)" in _facts(report, "gdpr-25", "pii_redaction")
    assert _clause(report, "cn-genai-14")["status"] == "partly"
    assert "an output carrying a credential is not stopped" in _facts(report, "cn-genai-14", "output_moderation")
    assert "output.rego" not in _facts(report, "eu-ai-act-14", "policy_versioning")


def test_an_erasure_undone_and_a_chain_edited(write_config, system) -> None:
    engine = open_audit_engine(system["audit_url"])
    with engine.begin() as connection:  # a restore from backup brings the erased subject's key back
        connection.execute(text("INSERT INTO audit_subject_keys (subject, wrapped_key, created_us) "
                                "VALUES (:s, :k, 1)"), {"s": system["bob"], "k": b"\x00" * 60})
    report = _report(write_config())
    assert _clause(report, "gdpr-17")["status"] == "not met"
    assert f"subject {system['bob']} erased at" in _facts(report, "gdpr-17") and "its key still exists" in \
        _facts(report, "gdpr-17")
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("ALTER TABLE audit_records DISABLE TRIGGER USER"))
        else:
            connection.execute(text("DROP TRIGGER audit_records_no_update"))
        connection.execute(text("UPDATE audit_records SET tenant = 'evil' WHERE seq = 2"))
    engine.dispose()
    report = _report(write_config(), "eu-ai-act")
    assert _clause(report, "eu-ai-act-19")["status"] == "partly"
    assert "FAILED verification: 1 problem(s)" in _facts(report, "eu-ai-act-19", "audit_trail")
    assert "record 2 (request req-2) was edited" in _facts(report, "eu-ai-act-19", "audit_trail")


def test_the_period_counts_only_its_records(write_config) -> None:
    report = _report(write_config(), "eu-ai-act", ReportPeriod.parse(since="2020-01-01"))
    assert report["period"]["since"] == "2020-01-01T00:00:00+00:00"
    assert "4 record(s) from 2020-01-01T00:00:00+00:00 to" in _facts(report, "eu-ai-act-12", "audit_trail")
    before = ReportPeriod(until_us=1_600_000_000_000_000, since_us=1_500_000_000_000_000)  # 2017-07 to 2020-09
    report = _report(write_config(), "eu-ai-act", before)
    assert _clause(report, "eu-ai-act-12")["status"] == "partly"
    assert "holds no record from 2017-07-14T02:40:00+00:00 to 2020-09-13T12:26:40+00:00" in \
        _facts(report, "eu-ai-act-12", "audit_trail")
    assert json.loads(json.dumps(report)) == report
    with pytest.raises(ComplianceReportError, match="--since 2999-01-01 is in the future"):
        ReportPeriod.parse(since="2999-01-01")
    with pytest.raises(ComplianceReportError, match="give --since or --period, not both"):
        ReportPeriod.parse(since="2020-01-01", period="3d")
    assert ReportPeriod.parse(period="2w", now_s=1_000_000.0) == ReportPeriod(1_000_000_000_000, -209_600_000_000)


@pytest.mark.parametrize("audit_url", ["sqlite"], indirect=True)
def test_a_missing_database_and_a_broken_bundle(write_config, system) -> None:
    missing = system["folder"] / "elsewhere" / "audit.db"
    (system["policies"] / "output.rego").write_text("package mcp.output\n\ndeny contains {")
    report = _report(write_config(audit_url=f"sqlite:///{missing}"), "gdpr")
    assert not missing.exists() and not missing.parent.exists()  # the report made no database
    assert _clause(report, "gdpr-17")["status"] == "not met"
    assert f"audit database {missing} does not exist: the server has recorded nothing there" in \
        _facts(report, "gdpr-17", "crypto_erasure")
    assert _clause(report, "gdpr-25")["status"] == "not met"
    redaction = _facts(report, "gdpr-25", "pii_redaction")
    assert f"policy bundle {system['policies']} does not compile" in redaction and "output.rego" in redaction


@pytest.mark.parametrize("audit_url", ["sqlite"], indirect=True)
def test_registry_lineage_with_registry(write_config, system, capsys: pytest.CaptureFixture) -> None:
    from mcp.commands.cli import main
    from mcp.commands.compliance import registry_versions

    registry = f"sqlite:///{system['folder'] / 'registry.db'}"
    assert main(["registry", "--registry", registry, "add", str(system["models"] / "tiny.mcp"), "--name", "tiny"]) == 0
    capsys.readouterr()
    with EvidenceContext.from_config_file(write_config(), registry_versions=registry_versions(registry)) as context:
        report = build_report(context, "eu-ai-act").to_json()
    lineage = _facts(report, "eu-ai-act-53", "model_lineage")
    assert "registry: 1 of 1 model version(s) carry lineage" in lineage

"""A data subject is a tenant's user, on SQLite and PostgreSQL: two tenants' "alice" are two
subjects (export gives one tenant's prompts, erase shreds one tenant's captures), the CLI takes
the tenant, and a database written before audit0003 (one pseudonym for every tenant's "alice")
is upgraded with its chain still verifying, its older records found by the legacy pseudonym and
the tenant, and erased per tenant."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, select

from mcp.commands.cli import main
from mcp.governance.audit import schema
from mcp.governance.audit.database import MIGRATIONS, open_audit_engine
from mcp.governance.audit.keys import AuditKeys
from mcp.governance.audit.log import AuditEntry, AuditLog, Capture
from mcp.governance.audit.verify import verify
from mcp.governance.detectors.scanner import Scanner
from mcp.governance.plane import GovernancePlane, InferenceOutcome, InferenceRequest
from mcp.governance.policy.bundle import SHIPPED
from mcp.governance.policy.engine import RegoPolicyEngine
from mcp.governance.tracing.spans import InferenceTracer


def _cli(capsys, audit_url: str, key_file: Path, *args: str) -> list[str]:
    assert main(["audit", "--db", audit_url, "--key-file", str(key_file), *args]) == 0
    return capsys.readouterr().out.splitlines()


def _exported(capsys, audit_url: str, key_file: Path, tenant: str, user: str) -> list[tuple[str, str | None]]:
    """(tenant, captured prompt) of each record ``audit export`` gives for the tenant's user."""
    lines = _cli(capsys, audit_url, key_file, "export", "--tenant", tenant, "--subject", user)
    return [(r["tenant"], r.get("capture", {}).get("prompt")) for r in map(json.loads, lines)]


def _admit_and_finish(plane: GovernancePlane, tenant: str, user: str, prompt: str) -> None:
    async def run() -> None:
        inference = await plane.admit(InferenceRequest(
            request_id=f"req-{tenant}", route="POST /v1/completions", operation="text_completion", tenant=tenant,
            model="tiny", prompt_texts=(prompt,), max_tokens=4, user=user))
        await inference.finish(InferenceOutcome(status="ok", model_key="tiny:1", outputs=("an answer",)))

    asyncio.run(run())


def test_two_tenants_alice_are_two_subjects(audit_url: str, key_file: Path, tmp_path: Path, capsys) -> None:
    shutil.copytree(SHIPPED, tmp_path / "policies")
    plane = GovernancePlane(RegoPolicyEngine(tmp_path / "policies"), Scanner(), InferenceTracer("test"),
                            AuditLog.open(audit_url, str(key_file)), capture=True)
    try:
        _admit_and_finish(plane, "acme", "alice", "acme's secret plan")
        _admit_and_finish(plane, "globex", "alice", "globex's secret plan")
        keys = plane.audit.keys
    finally:
        plane.close()
    assert keys.pseudonym("acme", "alice") != keys.pseudonym("globex", "alice")
    assert _exported(capsys, audit_url, key_file, "acme", "alice") == [("acme", "acme's secret plan")]
    out = _cli(capsys, audit_url, key_file, "erase", "--tenant", "acme", "--subject", "alice")
    assert "key destroyed, 1 capture(s) deleted, 1 record(s) kept" in out[0]
    assert _exported(capsys, audit_url, key_file, "acme", "alice") == [("acme", None)]
    assert _exported(capsys, audit_url, key_file, "globex", "alice") == [("globex", "globex's secret plan")]
    assert verify(open_audit_engine(audit_url)).ok


def test_the_cli_asks_for_the_tenant(audit_url: str, key_file: Path, capsys) -> None:
    base = ["audit", "--db", audit_url, "--key-file", str(key_file)]
    assert main([*base, "export", "--subject", "alice"]) == 2
    assert "--subject needs --tenant: a subject is a tenant's user" in capsys.readouterr().err
    assert main([*base, "erase", "--pseudonym", "0" * 32, "--tenant", "acme"]) == 2
    assert "--tenant goes with --subject" in capsys.readouterr().err


def _downgrade_to_audit0002(url: str) -> None:
    """The database as a server before audit0003 left it."""
    engine = open_audit_engine(url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "audit0002")
    engine.dispose()


def _legacy_entry(i: int, tenant: str, subject: str) -> AuditEntry:
    return AuditEntry(f"old-{i}", tenant, "POST /v1/completions", f"{i:064x}", "ok", subject=subject)


def test_records_from_before_audit0003_stay_verifiable_and_are_found_per_tenant(
        audit_url: str, key_file: Path, capsys) -> None:
    keys = AuditKeys.from_file(key_file)
    _downgrade_to_audit0002(audit_url)
    old = keys.legacy_pseudonym("alice")  # what the server wrote then, for either tenant
    legacy_log = AuditLog(create_engine(audit_url), keys)  # not migrated: the old server's writer
    legacy_log.append(_legacy_entry(1, "acme", old), Capture("acme's old prompt", "old answer"))
    legacy_log.append(_legacy_entry(2, "globex", old), Capture("globex's old prompt", "old answer"))
    legacy_log.close()

    log = AuditLog.open(audit_url, str(key_file))  # upgrades to audit0003
    try:
        assert verify(log.engine).ok
        with log.engine.connect() as connection:
            assert connection.execute(select(schema.pseudonym_schemes.c.first_seq)).scalars().all() == [3]
        log.append(AuditEntry("new-3", "acme", "POST /v1/completions", "3" * 64, "ok",
                              subject=keys.pseudonym("acme", "alice")), Capture("acme's new prompt", None))
        log.append(AuditEntry("new-4", "globex", "POST /v1/completions", "4" * 64, "ok",
                              subject=keys.pseudonym("globex", "alice")), Capture("globex's new prompt", None))
    finally:
        log.close()
    assert _exported(capsys, audit_url, key_file, "acme", "alice") == [("acme", "acme's old prompt"),
                                                                      ("acme", "acme's new prompt")]
    out = _cli(capsys, audit_url, key_file, "erase", "--tenant", "acme", "--subject", "alice")
    assert "2 capture(s) deleted, 2 record(s) kept, 1 of them under the legacy pseudonym" in out[0]
    assert _exported(capsys, audit_url, key_file, "acme", "alice") == [("acme", None), ("acme", None)]
    assert _exported(capsys, audit_url, key_file, "globex", "alice") == [("globex", "globex's old prompt"),
                                                                        ("globex", "globex's new prompt")]
    engine = open_audit_engine(audit_url)
    with engine.connect() as connection:
        erasures = connection.execute(select(schema.erasures).order_by(schema.erasures.c.id)).all()
    assert [(e.subject, e.tenant, e.key_destroyed, e.num_captures) for e in erasures] == [
        (keys.pseudonym("acme", "alice"), None, 1, 1), (old, "acme", 0, 1)]  # the old key: globex still needs it
    assert verify(engine).ok
    engine.dispose()

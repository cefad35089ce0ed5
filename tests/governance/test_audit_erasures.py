"""The register of erasures (audit0002) on SQLite and PostgreSQL: `erase` writes a row in the
same transaction, the register refuses edits, a database made by audit0001 alone is upgraded,
and the migrated tables match the schema module."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import select, text
from sqlalchemy.exc import DBAPIError

from mcp.governance.audit import schema
from mcp.governance.audit.database import open_audit_engine
from mcp.governance.audit.log import AuditEntry, AuditLog, Capture
from mcp.governance.audit.maintenance import erase_subject


def test_erase_registers_the_erasure(audit_log: AuditLog) -> None:
    subject = audit_log.keys.pseudonym("acme", "carol")
    audit_log.append(AuditEntry("req-1", "acme", "POST /v1/chat/completions", "0" * 64, "ok", subject=subject),
                     Capture("hello", "hi"))
    erase_subject(audit_log.engine, subject)
    erase_subject(audit_log.engine, subject)  # again: nothing left, still registered
    with audit_log.engine.connect() as connection:
        rows = connection.execute(select(schema.erasures).order_by(schema.erasures.c.id)).all()
    assert [(r.subject, r.key_destroyed, r.num_captures) for r in rows] == [(subject, 1, 1), (subject, 0, 0)]
    assert rows[0].at_us <= rows[1].at_us
    for statement in ("UPDATE audit_erasures SET subject = 'x'", "DELETE FROM audit_erasures"):
        with pytest.raises(DBAPIError, match="audit_erasures is append-only"):
            with audit_log.engine.begin() as connection:
                connection.execute(text(statement))


def test_an_audit0001_database_is_upgraded(audit_url: str) -> None:
    engine = open_audit_engine(audit_url)
    with engine.begin() as connection:  # back to the first revision, as a database made before audit0002
        connection.execute(text("DROP TABLE audit_erasures"))
        connection.execute(text("DROP TABLE audit_pseudonym_schemes"))
        connection.execute(text("ALTER TABLE audit_records DROP COLUMN request_metadata"))  # audit0004's
        connection.execute(text("UPDATE audit_alembic_version SET version_num = 'audit0001'"))
    engine.dispose()
    engine = open_audit_engine(audit_url)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT version_num FROM audit_alembic_version")).scalar() == "audit0004"
        assert connection.execute(select(schema.erasures)).all() == []
        differences = compare_metadata(MigrationContext.configure(
            connection, opts={"version_table": "audit_alembic_version"}), schema.metadata)
    assert differences == []
    engine.dispose()

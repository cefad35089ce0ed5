"""A request's metadata in the audit record (``request_metadata``, audit0004): kept, hashed into
the chain when set (an edit shows in verify), and absent from the hash of records without it,
so records written before the column existed verify as they did. SQLite and PostgreSQL."""

from __future__ import annotations

from sqlalchemy import select, text

from mcp.governance.audit import schema
from mcp.governance.audit.chain import canonical_json, record_hash
from mcp.governance.audit.log import AuditEntry, AuditLog
from mcp.governance.audit.verify import verify


def _entry(i: int, metadata: dict | None = None) -> AuditEntry:
    return AuditEntry(f"req-{i}", "acme", "POST /v1/chat/completions", f"{i:064x}", "ok", model="smollm2",
                      request_metadata=canonical_json(metadata) if metadata else None)


def test_metadata_is_kept_and_hashed_and_old_records_keep_their_hash(audit_log: AuditLog) -> None:
    audit_log.append(_entry(1))
    audit_log.append(_entry(2, {"app": "billing", "run": "7"}))
    with audit_log.engine.connect() as connection:
        rows = connection.execute(select(schema.records).order_by(schema.records.c.seq)).all()
    assert rows[0].request_metadata is None and rows[1].request_metadata == '{"app":"billing","run":"7"}'
    fields = {name: getattr(rows[0], name) for name in schema.records.c.keys()}
    without = {k: v for k, v in fields.items() if k != "request_metadata"}
    assert record_hash(rows[0].prev_hash, without) == rows[0].hash  # the pre-audit0004 hash
    assert verify(audit_log.engine).ok


def test_an_edited_metadata_shows_in_verify(audit_log: AuditLog) -> None:
    audit_log.append(_entry(1, {"app": "billing"}))
    audit_log.append(_entry(2))
    with audit_log.engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("ALTER TABLE audit_records DISABLE TRIGGER USER"))
        else:
            connection.execute(text("DROP TRIGGER audit_records_no_update"))
        connection.execute(text("""UPDATE audit_records SET request_metadata = '{"app":"other"}' WHERE seq = 1"""))
    assert verify(audit_log.engine).problems == [
        "record 1 (request req-1) was edited: its fields no longer match its hash"]

"""The audit trail: records, head, anchors, subject keys, captures; append-only triggers.

Revision ID: audit0001
Revises:
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import BigInteger, Column, Integer, MetaData, String, Table, Text

from mcp.governance.audit import schema

revision = "audit0001"
down_revision = None
branch_labels = None
depends_on = None

# audit_records as this revision made it (audit0004 adds ``request_metadata``): frozen here.
_RECORDS = Table(
    "audit_records", MetaData(),
    Column("seq", BigInteger, primary_key=True, autoincrement=False),
    Column("at_us", BigInteger, nullable=False, index=True),
    Column("request_id", String(100), nullable=False),
    Column("trace_id", String(32)),
    Column("tenant", String(200), nullable=False),
    Column("subject", String(64), index=True),
    Column("model", String(200)),
    Column("model_version", String(100)),
    Column("route", String(200), nullable=False),
    Column("decisions", Text, nullable=False),
    Column("prompt_sha256", String(64), nullable=False),
    Column("output_sha256", String(64)),
    Column("prompt_tokens", Integer, nullable=False),
    Column("completion_tokens", Integer, nullable=False),
    Column("latency_us", BigInteger, nullable=False),
    Column("status", String(100), nullable=False),
    Column("prev_hash", String(64), nullable=False),
    Column("hash", String(64), nullable=False, unique=True),
)
_TABLES = [schema.head, schema.anchors, schema.subject_keys, schema.captures]
_COVERED = "(SELECT COALESCE(MAX(last_seq), 0) FROM audit_anchors)"
_SQLITE = [
    "CREATE TRIGGER audit_records_no_update BEFORE UPDATE ON audit_records "
    "BEGIN SELECT RAISE(ABORT, 'audit_records is append-only'); END",
    f"CREATE TRIGGER audit_records_no_delete BEFORE DELETE ON audit_records WHEN OLD.seq > {_COVERED} "
    "BEGIN SELECT RAISE(ABORT, 'audit_records is append-only (prune writes an anchor first)'); END",
    "CREATE TRIGGER audit_anchors_no_update BEFORE UPDATE ON audit_anchors "
    "BEGIN SELECT RAISE(ABORT, 'audit_anchors is append-only'); END",
    "CREATE TRIGGER audit_anchors_no_delete BEFORE DELETE ON audit_anchors "
    "BEGIN SELECT RAISE(ABORT, 'audit_anchors is append-only'); END",
]
_POSTGRESQL = [
    "CREATE FUNCTION audit_records_guard() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    f"IF TG_OP = 'DELETE' AND OLD.seq <= {_COVERED} THEN RETURN OLD; END IF; "
    "RAISE EXCEPTION 'audit_records is append-only (prune writes an anchor first)'; END $$",
    "CREATE TRIGGER audit_records_no_change BEFORE UPDATE OR DELETE ON audit_records "
    "FOR EACH ROW EXECUTE FUNCTION audit_records_guard()",
    "CREATE FUNCTION audit_append_only() RETURNS trigger LANGUAGE plpgsql AS "
    "$$ BEGIN RAISE EXCEPTION '% is append-only', TG_TABLE_NAME; END $$",
    "CREATE TRIGGER audit_records_no_truncate BEFORE TRUNCATE ON audit_records "
    "FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only()",
    "CREATE TRIGGER audit_anchors_no_change BEFORE UPDATE OR DELETE ON audit_anchors "
    "FOR EACH ROW EXECUTE FUNCTION audit_append_only()",
    "CREATE TRIGGER audit_anchors_no_truncate BEFORE TRUNCATE ON audit_anchors "
    "FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only()",
]


def upgrade() -> None:
    bind = op.get_bind()
    _RECORDS.create(bind)
    schema.metadata.create_all(bind, tables=_TABLES)  # later revisions add their own tables
    op.execute(schema.head.insert().values(id=1, seq=0, hash=schema.GENESIS))
    for statement in _POSTGRESQL if bind.dialect.name == "postgresql" else _SQLITE:
        op.execute(statement)


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        op.execute("DROP FUNCTION audit_records_guard() CASCADE")
        op.execute("DROP FUNCTION audit_append_only() CASCADE")
    schema.metadata.drop_all(bind, tables=_TABLES)
    _RECORDS.drop(bind)

"""The audit trail: records, head, anchors, subject keys, captures; append-only triggers.

Revision ID: audit0001
Revises:
"""

from __future__ import annotations

from alembic import op

from mcp.governance.audit import schema

revision = "audit0001"
down_revision = None
branch_labels = None
depends_on = None

_TABLES = [schema.records, schema.head, schema.anchors, schema.subject_keys, schema.captures]
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

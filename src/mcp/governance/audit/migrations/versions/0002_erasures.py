"""The register of erasures: one append-only row per ``audit erase`` (subject pseudonym, time).

Revision ID: audit0002
Revises: audit0001
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import BigInteger, Column, Integer, MetaData, String, Table

# The table as this revision made it (audit0003 adds ``tenant``): frozen here, not schema.erasures.
_ERASURES = Table(
    "audit_erasures", MetaData(),
    Column("id", Integer, primary_key=True),
    Column("subject", String(64), nullable=False, index=True),
    Column("at_us", BigInteger, nullable=False),
    Column("key_destroyed", Integer, nullable=False),
    Column("num_captures", BigInteger, nullable=False),
)

revision = "audit0002"
down_revision = "audit0001"
branch_labels = None
depends_on = None

_SQLITE = [
    "CREATE TRIGGER audit_erasures_no_update BEFORE UPDATE ON audit_erasures "
    "BEGIN SELECT RAISE(ABORT, 'audit_erasures is append-only'); END",
    "CREATE TRIGGER audit_erasures_no_delete BEFORE DELETE ON audit_erasures "
    "BEGIN SELECT RAISE(ABORT, 'audit_erasures is append-only'); END",
]
_POSTGRESQL = [  # audit_append_only() comes from audit0001
    "CREATE TRIGGER audit_erasures_no_change BEFORE UPDATE OR DELETE ON audit_erasures "
    "FOR EACH ROW EXECUTE FUNCTION audit_append_only()",
    "CREATE TRIGGER audit_erasures_no_truncate BEFORE TRUNCATE ON audit_erasures "
    "FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only()",
]


def upgrade() -> None:
    bind = op.get_bind()
    _ERASURES.create(bind)
    for statement in _POSTGRESQL if bind.dialect.name == "postgresql" else _SQLITE:
        op.execute(statement)


def downgrade() -> None:
    _ERASURES.drop(op.get_bind())

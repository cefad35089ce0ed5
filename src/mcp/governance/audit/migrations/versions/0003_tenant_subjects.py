"""Subjects per tenant: the pseudonym becomes HMAC([tenant, user]) from the next record on.

Records already written keep their legacy pseudonym, HMAC(user) shared by every tenant: they
are hashed into the chain, so rewriting them would break it. This revision only notes where
the new scheme starts (``audit_pseudonym_schemes.first_seq``: the head's sequence number + 1),
so that ``audit export``/``erase --tenant T --subject U`` also find the older records by the
legacy pseudonym *and* the tenant column, and gives ``audit_erasures`` a ``tenant`` for an
erasure limited to one tenant's legacy captures. The chain verifies before and after.

Revision ID: audit0003
Revises: audit0002
"""

from __future__ import annotations

import time

from alembic import op
from sqlalchemy import Column, String, select

from mcp.governance.audit import schema

revision = "audit0003"
down_revision = "audit0002"
branch_labels = None
depends_on = None

TENANT_SCHEME = "tenant+user"
_SQLITE = [
    "CREATE TRIGGER audit_pseudonym_schemes_no_update BEFORE UPDATE ON audit_pseudonym_schemes "
    "BEGIN SELECT RAISE(ABORT, 'audit_pseudonym_schemes is append-only'); END",
    "CREATE TRIGGER audit_pseudonym_schemes_no_delete BEFORE DELETE ON audit_pseudonym_schemes "
    "BEGIN SELECT RAISE(ABORT, 'audit_pseudonym_schemes is append-only'); END",
]
_POSTGRESQL = [  # audit_append_only() comes from audit0001
    "CREATE TRIGGER audit_pseudonym_schemes_no_change BEFORE UPDATE OR DELETE ON audit_pseudonym_schemes "
    "FOR EACH ROW EXECUTE FUNCTION audit_append_only()",
    "CREATE TRIGGER audit_pseudonym_schemes_no_truncate BEFORE TRUNCATE ON audit_pseudonym_schemes "
    "FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only()",
]


def upgrade() -> None:
    bind = op.get_bind()
    op.add_column("audit_erasures", Column("tenant", String(200)))
    schema.pseudonym_schemes.create(bind)
    head_seq = bind.execute(select(schema.head.c.seq).where(schema.head.c.id == 1)).scalar_one()
    op.execute(schema.pseudonym_schemes.insert().values(scheme=TENANT_SCHEME, first_seq=head_seq + 1,
                                                         at_us=time.time_ns() // 1000))
    for statement in _POSTGRESQL if bind.dialect.name == "postgresql" else _SQLITE:
        op.execute(statement)


def downgrade() -> None:
    schema.pseudonym_schemes.drop(op.get_bind())
    op.drop_column("audit_erasures", "tenant")  # plain ALTER TABLE (SQLite >= 3.35): the triggers stay

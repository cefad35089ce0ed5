"""The client's metadata tags in each record (``request_metadata``, canonical JSON).

Chat completions' ``metadata`` (up to 16 string pairs a client attaches to a request) is kept
in the record, hashed into the chain with the other fields when set. Records written before
this revision have none (NULL) and their hashes leave it out, so the chain verifies before and
after. The column is only added: the append-only triggers cover it as they cover the table.

Revision ID: audit0004
Revises: audit0003
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import Column, Text

revision = "audit0004"
down_revision = "audit0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("audit_records", Column("request_metadata", Text))


def downgrade() -> None:
    op.drop_column("audit_records", "request_metadata")  # plain ALTER TABLE (SQLite >= 3.35)

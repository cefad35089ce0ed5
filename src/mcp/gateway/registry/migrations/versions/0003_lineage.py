"""Model and data lineage as columns: base_model, source_sha256, datasets (a JSON list).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("model_versions", sa.Column("base_model", sa.String(400)))
    op.add_column("model_versions", sa.Column("source_sha256", sa.String(64)))
    op.add_column("model_versions", sa.Column("datasets", sa.JSON))


def downgrade() -> None:
    with op.batch_alter_table("model_versions") as batch:
        batch.drop_column("datasets")
        batch.drop_column("source_sha256")
        batch.drop_column("base_model")

"""Initial registry schema: models, model_versions, deployments, change_log (append-only).

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_EXCLUSIVE = "stage IN ('canary', 'production')"
_SQLITE_APPEND_ONLY = [
    "CREATE TRIGGER change_log_no_update BEFORE UPDATE ON change_log "
    "BEGIN SELECT RAISE(ABORT, 'change_log is append-only'); END",
    "CREATE TRIGGER change_log_no_delete BEFORE DELETE ON change_log "
    "BEGIN SELECT RAISE(ABORT, 'change_log is append-only'); END",
]
_POSTGRESQL_APPEND_ONLY = [
    "CREATE FUNCTION change_log_append_only() RETURNS trigger LANGUAGE plpgsql AS "
    "$$ BEGIN RAISE EXCEPTION 'change_log is append-only'; END $$",
    "CREATE TRIGGER change_log_no_change BEFORE UPDATE OR DELETE ON change_log "
    "FOR EACH ROW EXECUTE FUNCTION change_log_append_only()",
    "CREATE TRIGGER change_log_no_truncate BEFORE TRUNCATE ON change_log "
    "FOR EACH STATEMENT EXECUTE FUNCTION change_log_append_only()",
]


def _when() -> sa.Column:
    return sa.Column("created_at", sa.DateTime(timezone=True), nullable=False)


def upgrade() -> None:
    op.create_table(
        "models",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        _when(),
        sa.Column("created_by", sa.String(200), nullable=False),
    )
    op.create_table(
        "model_versions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("model_id", sa.Integer, sa.ForeignKey("models.id", ondelete="RESTRICT"), nullable=False),
        sa.Column("version", sa.String(100), nullable=False),
        sa.Column("stage", sa.String(20), nullable=False),
        sa.Column("artifact_uri", sa.String(2000), nullable=False),
        sa.Column("format", sa.String(20), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("size_bytes", sa.BigInteger, nullable=False),
        sa.Column("architecture", sa.String(200)),
        sa.Column("parameter_count", sa.BigInteger),
        sa.Column("quantization", sa.String(100)),
        sa.Column("context_length", sa.Integer),
        sa.Column("license", sa.String(200)),
        sa.Column("signature_status", sa.String(20), nullable=False),
        sa.Column("lineage", sa.JSON, nullable=False),
        _when(),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.UniqueConstraint("model_id", "version", name="uq_model_versions_model_version"),
        sa.CheckConstraint("stage IN ('staging', 'canary', 'production', 'archived')", name="ck_stage"),
        sa.CheckConstraint("signature_status IN ('unsigned', 'signed', 'verified', 'invalid')",
                           name="ck_signature_status"),
    )
    op.create_index("uq_model_versions_exclusive_stage", "model_versions", ["model_id", "stage"], unique=True,
                    sqlite_where=sa.text(_EXCLUSIVE), postgresql_where=sa.text(_EXCLUSIVE))
    op.create_table(
        "deployments",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("version_id", sa.Integer, sa.ForeignKey("model_versions.id", ondelete="RESTRICT"),
                  nullable=False),
        sa.Column("instance_pool", sa.String(200), nullable=False),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("traffic_percent", sa.Integer, nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        _when(),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("version_id", "instance_pool", name="uq_deployments_version_pool"),
        sa.CheckConstraint("traffic_percent BETWEEN 0 AND 100", name="ck_traffic_percent"),
    )
    op.create_table(
        "change_log",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("action", sa.String(50), nullable=False),
        sa.Column("subject", sa.String(400), nullable=False),
        sa.Column("before", sa.JSON),
        sa.Column("after", sa.JSON),
    )
    op.create_index("ix_change_log_subject", "change_log", ["subject"])
    dialect = op.get_bind().dialect.name
    for statement in _SQLITE_APPEND_ONLY if dialect == "sqlite" else _POSTGRESQL_APPEND_ONLY:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER change_log_no_truncate ON change_log")
        op.execute("DROP TRIGGER change_log_no_change ON change_log")
        op.execute("DROP FUNCTION change_log_append_only()")
    op.drop_table("change_log")
    op.drop_table("deployments")
    op.drop_index("uq_model_versions_exclusive_stage", table_name="model_versions")
    op.drop_table("model_versions")
    op.drop_table("models")

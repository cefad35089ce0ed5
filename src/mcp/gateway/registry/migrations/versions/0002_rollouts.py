"""Canary rollouts: rollouts (one running per route) and rollout_events (analysis, steps, who/when).

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_RUNNING = "status = 'running'"


def upgrade() -> None:
    op.create_table(
        "rollouts",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("route", sa.String(200), nullable=False),
        sa.Column("stable_arm", sa.String(200), nullable=False),
        sa.Column("canary_arm", sa.String(200), nullable=False),
        sa.Column("stable_model", sa.String(400), nullable=False),
        sa.Column("canary_model", sa.String(400), nullable=False),
        sa.Column("stable_pool", sa.String(200), nullable=False),
        sa.Column("canary_pool", sa.String(200), nullable=False),
        sa.Column("steps", sa.JSON, nullable=False),
        sa.Column("step_index", sa.Integer, nullable=False),
        sa.Column("weight", sa.Integer, nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("hold_s", sa.Float, nullable=False),
        sa.Column("min_requests", sa.Integer, nullable=False),
        sa.Column("gates", sa.JSON, nullable=False),
        sa.Column("reason", sa.String(2000)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("step_started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("status IN ('running', 'succeeded', 'rolled_back', 'aborted')", name="ck_rollout_status"),
        sa.CheckConstraint("weight BETWEEN 0 AND 100", name="ck_rollout_weight"),
    )
    op.create_index("uq_rollouts_running_route", "rollouts", ["route"], unique=True,
                    sqlite_where=sa.text(_RUNNING), postgresql_where=sa.text(_RUNNING))
    op.create_table(
        "rollout_events",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True),
        sa.Column("rollout_id", sa.Integer, sa.ForeignKey("rollouts.id", ondelete="RESTRICT"), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("step_index", sa.Integer, nullable=False),
        sa.Column("weight", sa.Integer, nullable=False),
        sa.Column("passed", sa.Boolean),
        sa.Column("detail", sa.JSON),
    )
    op.create_index("ix_rollout_events_rollout_id", "rollout_events", ["rollout_id"])


def downgrade() -> None:
    op.drop_index("ix_rollout_events_rollout_id", table_name="rollout_events")
    op.drop_table("rollout_events")
    op.drop_index("uq_rollouts_running_route", table_name="rollouts")
    op.drop_table("rollouts")

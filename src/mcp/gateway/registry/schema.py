"""The registry's tables as SQLAlchemy 2 typed ORM classes.

The Alembic migrations in ``migrations/versions`` create exactly these tables; a test
compares the two. ``change_log`` is append-only: the migration installs triggers that
refuse UPDATE and DELETE on it, in SQLite and PostgreSQL alike.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

SIGNATURE_STATUSES = ("unsigned", "signed", "verified", "invalid")


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, int: Integer}


class ModelRow(Base):
    __tablename__ = "models"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    created_by: Mapped[str] = mapped_column(String(200))
    versions: Mapped[list[VersionRow]] = relationship(back_populates="model", order_by="VersionRow.id")


class VersionRow(Base):
    __tablename__ = "model_versions"
    __table_args__ = (
        UniqueConstraint("model_id", "version", name="uq_model_versions_model_version"),
        # at most one canary and one production version per model
        Index("uq_model_versions_exclusive_stage", "model_id", "stage", unique=True,
              sqlite_where=text("stage IN ('canary', 'production')"),
              postgresql_where=text("stage IN ('canary', 'production')")),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    model_id: Mapped[int] = mapped_column(ForeignKey("models.id", ondelete="RESTRICT"))
    version: Mapped[str] = mapped_column(String(100))
    stage: Mapped[str] = mapped_column(String(20))
    artifact_uri: Mapped[str] = mapped_column(String(2000))
    format: Mapped[str] = mapped_column(String(20))
    sha256: Mapped[str] = mapped_column(String(64))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    architecture: Mapped[str | None] = mapped_column(String(200))
    parameter_count: Mapped[int | None] = mapped_column(BigInteger)
    quantization: Mapped[str | None] = mapped_column(String(100))
    context_length: Mapped[int | None] = mapped_column(Integer)
    license: Mapped[str | None] = mapped_column(String(200))
    signature_status: Mapped[str] = mapped_column(String(20))
    lineage: Mapped[dict[str, Any]] = mapped_column(JSON)
    # model and data lineage as columns of their own (migration 0003), for queries and reports
    base_model: Mapped[str | None] = mapped_column(String(400))
    source_sha256: Mapped[str | None] = mapped_column(String(64))
    datasets: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    created_by: Mapped[str] = mapped_column(String(200))
    model: Mapped[ModelRow] = relationship(back_populates="versions")


class DeploymentRow(Base):
    """A version placed on an instance pool with a share of traffic; ``role`` is ``stable``
    or ``canary``, which is the state a canary controller steps through."""

    __tablename__ = "deployments"
    __table_args__ = (UniqueConstraint("version_id", "instance_pool", name="uq_deployments_version_pool"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("model_versions.id", ondelete="RESTRICT"))
    instance_pool: Mapped[str] = mapped_column(String(200))
    role: Mapped[str] = mapped_column(String(20))
    traffic_percent: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(20))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class ChangeRow(Base):
    __tablename__ = "change_log"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    actor: Mapped[str] = mapped_column(String(200))
    action: Mapped[str] = mapped_column(String(50))
    subject: Mapped[str] = mapped_column(String(400), index=True)
    before: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    after: Mapped[dict[str, Any] | None] = mapped_column(JSON)


ROLLOUT_STATUSES = ("running", "succeeded", "rolled_back", "aborted")


class RolloutRow(Base):
    """A canary rollout on one split route: the canary arm's weight walks through ``steps``;
    ``step_index``/``weight`` are where it is, ``step_started_at`` when that step began.
    At most one rollout per route is ``running`` (a partial unique index)."""

    __tablename__ = "rollouts"
    __table_args__ = (
        Index("uq_rollouts_running_route", "route", unique=True,
              sqlite_where=text("status = 'running'"), postgresql_where=text("status = 'running'")),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    route: Mapped[str] = mapped_column(String(200))
    stable_arm: Mapped[str] = mapped_column(String(200))
    canary_arm: Mapped[str] = mapped_column(String(200))
    stable_model: Mapped[str] = mapped_column(String(400))
    canary_model: Mapped[str] = mapped_column(String(400))
    stable_pool: Mapped[str] = mapped_column(String(200))
    canary_pool: Mapped[str] = mapped_column(String(200))
    steps: Mapped[dict[str, Any]] = mapped_column(JSON)  # {"weights": [5, 20, 50, 100]}
    step_index: Mapped[int] = mapped_column(Integer)
    weight: Mapped[int] = mapped_column(Integer)  # the canary arm's percent now
    status: Mapped[str] = mapped_column(String(20))
    hold_s: Mapped[float] = mapped_column(Float)
    min_requests: Mapped[int] = mapped_column(Integer)
    gates: Mapped[dict[str, Any]] = mapped_column(JSON)  # max_p95_ms, max_error_rate, max_oom
    reason: Mapped[str | None] = mapped_column(String(2000))  # why it ended
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    created_by: Mapped[str] = mapped_column(String(200))
    step_started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class RolloutEventRow(Base):
    """What happened to a rollout, in order: start, each analysis and its figures, each step,
    promote, rollback, abort, success; with who and when."""

    __tablename__ = "rollout_events"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    rollout_id: Mapped[int] = mapped_column(ForeignKey("rollouts.id", ondelete="RESTRICT"), index=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    actor: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(20))
    step_index: Mapped[int] = mapped_column(Integer)
    weight: Mapped[int] = mapped_column(Integer)
    passed: Mapped[bool | None] = mapped_column(Boolean)
    detail: Mapped[dict[str, Any] | None] = mapped_column(JSON)

"""The registry's tables as SQLAlchemy 2 typed ORM classes.

The Alembic migrations in ``migrations/versions`` create exactly these tables; a test
compares the two. ``change_log`` is append-only: the migration installs triggers that
refuse UPDATE and DELETE on it, in SQLite and PostgreSQL alike.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, DateTime, ForeignKey, Index, Integer, String, UniqueConstraint, text
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

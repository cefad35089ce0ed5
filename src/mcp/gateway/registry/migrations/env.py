"""Alembic environment: runs on the connection ``migrate.upgrade`` hands over."""

from __future__ import annotations

from alembic import context
from sqlalchemy import text

from mcp.gateway.registry.schema import Base

MIGRATION_LOCK_ID = 7_2026  # pg_advisory_xact_lock key: one migrator at a time

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    if connection.dialect.name == "postgresql":
        connection.execute(text(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK_ID})"))
    context.run_migrations()

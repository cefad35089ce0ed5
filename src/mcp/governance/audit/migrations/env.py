"""Alembic environment of the audit tables: runs on the connection ``database.migrate`` hands
over, with a version table of its own so it can share a database with the registry."""

from __future__ import annotations

from alembic import context
from sqlalchemy import text

from mcp.governance.audit.schema import metadata

MIGRATION_LOCK_ID = 8_2026  # pg_advisory_xact_lock key: one migrator at a time
VERSION_TABLE = "audit_alembic_version"

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, version_table=VERSION_TABLE,
                  render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    if connection.dialect.name == "postgresql":
        connection.execute(text(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK_ID})"))
    context.run_migrations()

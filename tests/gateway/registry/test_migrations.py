"""The shipped Alembic migrations build exactly the ORM's schema, and rerun harmlessly."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from mcp.gateway.registry import migrate
from mcp.gateway.registry.database import create_registry_engine
from mcp.gateway.registry.schema import Base


def test_upgrade_reaches_head_and_is_idempotent(registry_url):
    engine = create_registry_engine(registry_url)
    try:
        assert migrate.current_revision(engine) is None
        assert migrate.upgrade(engine) == migrate.head_revision()
        assert migrate.upgrade(engine) == migrate.head_revision()
    finally:
        engine.dispose()


def test_migrated_schema_matches_the_orm(registry_url):
    engine = create_registry_engine(registry_url)
    try:
        migrate.upgrade(engine)
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": False})
            differences = compare_metadata(context, Base.metadata)
        assert differences == []
    finally:
        engine.dispose()


def test_sqlite_runs_in_wal_mode(tmp_path):
    engine = create_registry_engine(f"sqlite:///{tmp_path / 'r.db'}")
    try:
        with engine.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    finally:
        engine.dispose()

"""Apply the registry's Alembic migrations (shipped in this package) to a database.

``upgrade(engine)`` brings any registry database to the newest schema; running it again,
or from several processes at once, is safe: SQLite serializes it through ``BEGIN
IMMEDIATE``, PostgreSQL through a transaction-scoped advisory lock taken in ``env.py``.
Alembic keeps its running context in module globals, so within one process migrations
also take a lock: two threads never run ``env.py`` at the same time.
"""

from __future__ import annotations

import threading
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from mcp.gateway.registry.database import unavailable

MIGRATIONS = Path(__file__).with_name("migrations")
_IN_PROCESS = threading.Lock()


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def head_revision() -> str:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> str | None:
    """Migrate the database to ``revision``; returns the revision it is at afterwards."""
    config = alembic_config()
    try:
        with _IN_PROCESS, engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, revision)
    except DBAPIError as exc:
        raise unavailable(engine, exc) from None
    return current_revision(engine)

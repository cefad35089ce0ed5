"""Where the audit trail lives and how to connect to it.

The URL comes from the config (``serving.governance.audit.url``) or the command line, else
``$MCP_AUDIT_URL``, else an SQLite file ``audit.db`` beside the model cache. SQLite runs in
WAL mode with ``synchronous=FULL`` by default (a committed record is on disk, power loss
included; ``NORMAL`` keeps it through a killed process, not a power loss, and saves the fsync) and
``BEGIN IMMEDIATE`` (appenders from several processes queue for the write lock); PostgreSQL is
reached with psycopg 3 and may be the registry's own database (the tables and the Alembic
version table are the audit's own).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

from mcp.base.paths import mcp_home
from mcp.base.sqlite import switch_to_wal
from mcp.governance.errors import AuditError

URL_ENV = "MCP_AUDIT_URL"
SQLITE_SYNC = ("full", "normal")
MIGRATIONS = Path(__file__).with_name("migrations")
_MIGRATING = threading.Lock()  # Alembic keeps its running context in module globals


def default_url() -> str:
    return os.environ.get(URL_ENV) or f"sqlite:///{mcp_home() / 'audit.db'}"


def open_audit_engine(url: str | None = None, sqlite_sync: str = "full") -> Engine:
    """An engine on ``url`` with the audit tables migrated to the newest revision."""
    url = url or default_url()
    if sqlite_sync not in SQLITE_SYNC:
        raise AuditError(f"audit SQLite sync {sqlite_sync!r}: use one of {', '.join(SQLITE_SYNC)}")
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise AuditError(f"audit URL {url!r} is not a database URL; use sqlite:///PATH or "
                         "postgresql+psycopg://USER@HOST/DB") from None
    try:
        if parsed.get_backend_name() == "sqlite":
            if parsed.database and parsed.database != ":memory:":
                Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
            engine = create_engine(parsed, connect_args={"timeout": 60})
            event.listen(engine, "connect", lambda connection, _: _sqlite_on_connect(connection, sqlite_sync))
            event.listen(engine, "begin", lambda connection: connection.exec_driver_sql("BEGIN IMMEDIATE"))
        elif parsed.get_backend_name() == "postgresql":
            engine = create_engine(parsed, connect_args={"connect_timeout": 5}, pool_pre_ping=True)
        else:
            raise AuditError(f"audit URL {parsed.render_as_string(hide_password=True)}: only sqlite:/// and "
                             "postgresql+psycopg:// databases are supported")
    except (NoSuchModuleError, ModuleNotFoundError) as exc:
        raise AuditError(f"no database driver for {parsed.drivername} ({exc}); pip install 'mcp2026[governance]'") \
            from None
    _migrate(engine)
    return engine


def unreachable(engine: Engine, exc: BaseException) -> AuditError:
    where = engine.url.render_as_string(hide_password=True)
    detail = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
    return AuditError(f"audit database {where} failed ({detail}); check that it runs and the URL is right")


def _migrate(engine: Engine) -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    try:
        with _MIGRATING, engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
    except DBAPIError as exc:
        raise unreachable(engine, exc) from None


def _sqlite_on_connect(dbapi_connection, sync: str) -> None:
    dbapi_connection.isolation_level = None  # the "begin" event issues BEGIN IMMEDIATE itself
    cursor = dbapi_connection.cursor()
    switch_to_wal(cursor)
    cursor.execute(f"PRAGMA synchronous={sync.upper()}")
    cursor.execute("PRAGMA busy_timeout=60000")
    cursor.close()


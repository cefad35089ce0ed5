"""Where the registry lives and how to connect to it.

The URL comes from the caller, else ``$MCP_REGISTRY_URL``, else an SQLite file
``registry.db`` in the model cache (``$MCP_HOME``, by default ``~/.cache/mcp2026``).
SQLite runs in WAL mode with a busy timeout, and every transaction starts with
``BEGIN IMMEDIATE``: writers queue for the one write lock instead of failing half-way
(SQLite's deferred transactions fail with "database is locked" when two readers both try
to upgrade). PostgreSQL is reached with psycopg 3 (``postgresql+psycopg://...``).
"""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import Engine, create_engine, event, make_url, text
from sqlalchemy.engine import URL
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

from mcp.base.paths import mcp_home
from mcp.base.sqlite import SQLITE_BUSY_TIMEOUT_MS, switch_to_wal
from mcp.gateway.errors import RegistryUnavailableError

URL_ENV = "MCP_REGISTRY_URL"
CONNECT_TIMEOUT_S = 5


def default_url() -> str:
    """``$MCP_REGISTRY_URL``, else ``sqlite:///$MCP_HOME/registry.db``."""
    return os.environ.get(URL_ENV) or f"sqlite:///{mcp_home() / 'registry.db'}"


def create_registry_engine(url: str | None = None) -> Engine:
    """An engine for ``url`` (see ``default_url``), checked by one round trip."""
    parsed = _parse(url or default_url())
    if parsed.get_backend_name() == "sqlite":
        engine = _sqlite_engine(parsed)
    elif parsed.get_backend_name() == "postgresql":
        engine = _engine(parsed, connect_args={"connect_timeout": CONNECT_TIMEOUT_S}, pool_pre_ping=True)
    else:
        raise RegistryUnavailableError(
            f"registry URL {parsed.render_as_string(hide_password=True)}: only sqlite:/// and "
            "postgresql+psycopg:// databases are supported"
        )
    check_reachable(engine)
    return engine


def check_reachable(engine: Engine) -> None:
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    except DBAPIError as exc:
        raise unavailable(engine, exc) from None


def unavailable(engine: Engine, exc: BaseException) -> RegistryUnavailableError:
    where = engine.url.render_as_string(hide_password=True)
    detail = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
    return RegistryUnavailableError(
        f"registry database {where} cannot be reached ({detail}); check that the server runs "
        f"and the URL (--registry or ${URL_ENV}) is right"
    )


def _parse(url: str) -> URL:
    try:
        return make_url(url)
    except ArgumentError:
        raise RegistryUnavailableError(
            f"registry URL {url!r} is not a database URL; use sqlite:///PATH or postgresql+psycopg://USER@HOST/DB"
        ) from None


def _engine(url: URL, **options) -> Engine:
    try:
        return create_engine(url, **options)
    except (NoSuchModuleError, ModuleNotFoundError) as exc:
        raise RegistryUnavailableError(
            f"no database driver for {url.drivername} ({exc}); install the gateway extra: "
            "pip install 'mcp2026[gateway]'"
        ) from None


def _sqlite_engine(url: URL) -> Engine:
    if url.database and url.database != ":memory:":
        Path(url.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = _engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
    event.listen(engine, "connect", _sqlite_on_connect)
    event.listen(engine, "begin", _sqlite_on_begin)
    return engine


def _sqlite_on_connect(dbapi_connection, _record) -> None:
    dbapi_connection.isolation_level = None  # SQLAlchemy's "begin" event issues BEGIN itself
    cursor = dbapi_connection.cursor()
    switch_to_wal(cursor)
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _sqlite_on_begin(connection) -> None:
    connection.exec_driver_sql("BEGIN IMMEDIATE")

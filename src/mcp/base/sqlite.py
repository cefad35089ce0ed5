"""SQLite in WAL mode, for every database this project keeps in a file (the gateway's registry,
the governance audit log): readers never wait for the writer, and the switch itself waits its turn.

On the ground floor because governance and the gateway both open SQLite files and governance sits
below the gateway.
"""

from __future__ import annotations

import sqlite3
import time

SQLITE_BUSY_TIMEOUT_MS = 60_000


def switch_to_wal(cursor) -> None:
    """``PRAGMA journal_mode=WAL``, retried while another connection holds the lock.

    SQLite does not call the busy handler for a journal-mode change (it needs the
    exclusive lock, taken without waiting), so processes opening a new database at once
    see "database is locked" here although the busy timeout is set; they wait their turn
    the same way, up to the same timeout. Once the file is in WAL mode the pragma is a
    read of the header.
    """
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    delay = 0.002
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            busy = getattr(exc, "sqlite_errorcode", None) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
            if not busy or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(2 * delay, 0.05)

"""``AuditLog``: appends records to the chain, durably, from any thread or event loop.

``append(entry)`` returns once the record's transaction has committed (SQLite with
``synchronous=FULL``, PostgreSQL's commit): a response sent after it is never missing its
record, whatever kills the server. One writer thread does the appends (group commit): the
records queued while a transaction runs go together in the next one, so under load a commit
carries many records and the chain is extended in one order. Each transaction locks
``audit_head`` first, so several processes can append to one database.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import asdict, dataclass

from sqlalchemy import Connection, Engine, select, update
from sqlalchemy.exc import DBAPIError

from mcp.governance.audit import schema
from mcp.governance.audit.chain import OPTIONAL_HASHED_FIELDS, canonical_json, record_hash
from mcp.governance.audit.database import open_audit_engine, unreachable
from mcp.governance.audit.keys import AuditKeys, seal

MAX_BATCH = 256
_STOP = object()


@dataclass(frozen=True)
class AuditEntry:
    """One request's record, before it is chained. No raw prompt or output: their sha256."""

    request_id: str
    tenant: str
    route: str  # the API operation, e.g. "POST /v1/chat/completions"
    prompt_sha256: str
    status: str  # ok | denied | stopped | cancelled | error:<kind>
    decisions: tuple[dict, ...] = ()
    trace_id: str | None = None
    subject: str | None = None  # pseudonymous user id (AuditKeys.pseudonym)
    model: str | None = None
    model_version: str | None = None
    output_sha256: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_us: int = 0
    at_us: int = 0  # 0: the time of the append
    request_metadata: str | None = None  # the client's metadata tags as canonical JSON; None: none sent


@dataclass(frozen=True)
class Capture:
    """The text itself, stored only with capture on, encrypted under the subject's key."""

    prompt: str
    output: str | None


@dataclass(frozen=True)
class AppendedRecord:
    seq: int
    hash: str


@dataclass
class _Pending:
    entry: AuditEntry
    capture: Capture | None
    future: Future


class AuditLog:
    def __init__(self, engine: Engine, keys: AuditKeys) -> None:
        self.engine = engine
        self.keys = keys
        self._queue: queue.Queue = queue.Queue()
        self._writer = threading.Thread(target=self._run, name="audit-writer", daemon=True)
        self._writer.start()

    @classmethod
    def open(cls, url: str | None = None, key_file: str | None = None, sqlite_sync: str = "full") -> AuditLog:
        return cls(open_audit_engine(url, sqlite_sync), AuditKeys.from_file(key_file))

    def append(self, entry: AuditEntry, capture: Capture | None = None) -> AppendedRecord:
        """Chain ``entry`` and return once it is committed; raises AuditError if it could not be."""
        return self.submit(entry, capture).result()

    async def append_async(self, entry: AuditEntry, capture: Capture | None = None) -> AppendedRecord:
        return await asyncio.wrap_future(self.submit(entry, capture))

    def submit(self, entry: AuditEntry, capture: Capture | None = None) -> Future:
        if not self._writer.is_alive():
            raise RuntimeError("the audit log is closed")
        pending = _Pending(entry, capture, Future())
        self._queue.put(pending)
        return pending.future

    def close(self) -> None:
        """Write what is queued, then stop the writer."""
        if self._writer.is_alive():
            self._queue.put(_STOP)
            self._writer.join()
        self.engine.dispose()

    def _run(self) -> None:
        while True:
            batch, stop = self._next_batch()
            if batch:
                self._write(batch)
            if stop:
                return

    def _next_batch(self) -> tuple[list[_Pending], bool]:
        first = self._queue.get()
        if first is _STOP:
            return [], True
        batch = [first]
        while len(batch) < MAX_BATCH:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is _STOP:
                return batch, True
            batch.append(item)
        return batch, False

    def _write(self, batch: list[_Pending]) -> None:
        try:
            with self.engine.begin() as connection:
                appended = self._append_all(connection, batch)
        except DBAPIError as exc:
            error = unreachable(self.engine, exc)
            for pending in batch:
                pending.future.set_exception(error)
            return
        except Exception as exc:  # noqa: BLE001 - a bug: every waiter hears of it
            for pending in batch:
                pending.future.set_exception(exc)
            return
        for pending, record in zip(batch, appended):
            pending.future.set_result(record)

    def _append_all(self, connection: Connection, batch: list[_Pending]) -> list[AppendedRecord]:
        head = select(schema.head.c.seq, schema.head.c.hash).where(schema.head.c.id == 1)
        if connection.dialect.name == "postgresql":
            head = head.with_for_update()
        seq, prev_hash = connection.execute(head).one()
        appended = []
        for pending in batch:
            seq += 1
            fields = _fields(pending.entry)
            digest = record_hash(prev_hash, fields)
            # an optional field left unset is left out of the row as of the hash, so that a
            # writer keeps writing to a database from before that field's revision
            stored = {k: v for k, v in fields.items() if v is not None or k not in OPTIONAL_HASHED_FIELDS}
            connection.execute(schema.records.insert().values(seq=seq, prev_hash=prev_hash, hash=digest, **stored))
            if pending.capture is not None and pending.entry.subject is not None:
                self._store_capture(connection, seq, digest, pending.entry.subject, pending.capture)
            appended.append(AppendedRecord(seq, digest))
            prev_hash = digest
        connection.execute(update(schema.head).where(schema.head.c.id == 1).values(seq=seq, hash=prev_hash))
        return appended

    def _store_capture(self, connection: Connection, seq: int, digest: str, subject: str, capture: Capture) -> None:
        row = connection.execute(select(schema.subject_keys.c.wrapped_key)
                                 .where(schema.subject_keys.c.subject == subject)).first()
        if row is None:
            wrapped = self.keys.new_wrapped_key(subject)
            connection.execute(schema.subject_keys.insert().values(subject=subject, wrapped_key=wrapped,
                                                                   created_us=_now_us()))
        else:
            wrapped = row.wrapped_key
        nonce, ciphertext = seal(self.keys.unwrap(subject, wrapped), digest, capture.prompt, capture.output)
        connection.execute(schema.captures.insert().values(seq=seq, subject=subject, nonce=nonce,
                                                           ciphertext=ciphertext))


def _fields(entry: AuditEntry) -> dict:
    fields = asdict(entry)
    fields["decisions"] = canonical_json(list(entry.decisions))
    fields["at_us"] = entry.at_us or _now_us()
    return fields


def _now_us() -> int:
    return time.time_ns() // 1000

"""Erase (crypto-shredding), export (a subject's records and captures), prune (retention).

A subject is a tenant's user (``AuditKeys.subject``) or a bare pseudonym as records hold it.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

from sqlalchemy import Engine, and_, delete, func, select

from mcp.governance.audit import schema
from mcp.governance.audit.keys import AuditKeys, Subject, open_sealed
from mcp.governance.audit.log import AuditLog

log = logging.getLogger(__name__)
PRUNE_EVERY_S = 6 * 3600


@dataclass(frozen=True)
class EraseResult:
    subject: str
    key_destroyed: bool
    num_captures: int
    num_records: int  # kept: they hold hashes, not text, and the chain needs them
    num_legacy_records: int = 0  # of those, the tenant's records under the legacy pseudonym


def erase_subject(engine: Engine, subject: Subject | str) -> EraseResult:
    """Destroy the subject's key and delete its captures; its records stay (pseudonymous).
    The erasure is registered in ``audit_erasures`` in the same transaction.

    A tenant's user (a ``Subject`` with a legacy pseudonym) also loses the captures of its
    records written before audit0003; their key, shared with other tenants' same-named user,
    is destroyed once no capture is left under it (the erasure is registered with the tenant).
    """
    subject = Subject(subject) if isinstance(subject, str) else subject
    with engine.begin() as connection:
        own = schema.captures.c.subject == subject.pseudonym
        key_destroyed, num_captures = _erase(connection, subject.pseudonym, own)
        records = _count_records(connection, schema.records.c.subject == subject.pseudonym)
        legacy = _legacy_condition(connection, subject)
        num_legacy = _count_records(connection, legacy) if legacy is not None else 0
        if num_legacy:
            legacy_seqs = select(schema.records.c.seq).where(legacy)
            legacy_key, legacy_captures = _erase(connection, subject.legacy, schema.captures.c.seq.in_(legacy_seqs),
                                                 tenant=subject.tenant)
            key_destroyed, num_captures = key_destroyed or legacy_key, num_captures + legacy_captures
    return EraseResult(subject.pseudonym, key_destroyed, num_captures, records + num_legacy, num_legacy)


def _erase(connection, pseudonym: str, which, tenant: str | None = None) -> tuple[bool, int]:
    """Delete ``pseudonym``'s captures that ``which`` selects, then its key if none is left; register it."""
    captures = connection.execute(delete(schema.captures).where(schema.captures.c.subject == pseudonym, which))
    left = connection.execute(select(func.count()).select_from(schema.captures)
                              .where(schema.captures.c.subject == pseudonym)).scalar_one()
    destroyed = False
    if not left:
        keys = connection.execute(delete(schema.subject_keys).where(schema.subject_keys.c.subject == pseudonym))
        destroyed = keys.rowcount > 0
    connection.execute(schema.erasures.insert().values(subject=pseudonym, at_us=time.time_ns() // 1000,
                                                       key_destroyed=int(destroyed), num_captures=captures.rowcount,
                                                       tenant=tenant))
    return destroyed, captures.rowcount


def _count_records(connection, condition) -> int:
    return connection.execute(select(func.count()).select_from(schema.records).where(condition)).scalar_one()


def _legacy_condition(connection, subject: Subject):
    """Which records are ``subject``'s under its legacy pseudonym: the tenant's, written before
    the (tenant, user) scheme began; None when there is no such scheme start or no legacy name."""
    if subject.legacy is None or subject.tenant is None:
        return None
    first_seq = connection.execute(select(func.min(schema.pseudonym_schemes.c.first_seq))).scalar()
    if first_seq is None:
        return None
    records = schema.records.c
    return and_(records.subject == subject.legacy, records.tenant == subject.tenant, records.seq < first_seq)


def export_subject(engine: Engine, keys: AuditKeys, subject: Subject | str) -> Iterator[dict]:
    """Every record of ``subject`` (its legacy records first), each with its decrypted capture
    when one is kept."""
    subject = Subject(subject) if isinstance(subject, str) else subject
    with engine.connect() as connection:
        parts = [(subject.pseudonym, schema.records.c.subject == subject.pseudonym)]
        legacy = _legacy_condition(connection, subject)
        if legacy is not None:
            parts.insert(0, (subject.legacy, legacy))
        for pseudonym, condition in parts:
            yield from _export(connection, keys, pseudonym, condition)


def _export(connection, keys: AuditKeys, pseudonym: str, condition) -> Iterator[dict]:
    wrapped = connection.execute(select(schema.subject_keys.c.wrapped_key)
                                 .where(schema.subject_keys.c.subject == pseudonym)).scalar()
    key = keys.unwrap(pseudonym, wrapped) if wrapped is not None else None
    query = (select(schema.records, schema.captures.c.nonce, schema.captures.c.ciphertext)
             .outerjoin(schema.captures, schema.captures.c.seq == schema.records.c.seq)
             .where(condition).order_by(schema.records.c.seq))
    for row in connection.execute(query):
        record = {name: getattr(row, name) for name in schema.records.c.keys()}
        record["decisions"] = json.loads(record["decisions"])
        if key is not None and row.ciphertext is not None:
            record["capture"] = open_sealed(key, row.hash, row.nonce, row.ciphertext)
        yield record


@dataclass(frozen=True)
class PruneResult:
    num_pruned: int
    last_seq: int | None


def prune(engine: Engine, retention_days: float, now_s: float | None = None) -> PruneResult:
    """Delete the records older than the retention period, oldest first, behind an anchor.

    Only a prefix of the chain goes: the anchor keeps the hash of the newest record pruned,
    which the first kept record links to, so ``verify`` still checks every record left.
    """
    cutoff_us = int(((now_s if now_s is not None else time.time()) - retention_days * 86400) * 1e6)
    with engine.begin() as connection:
        newer = connection.execute(select(func.min(schema.records.c.seq))
                                   .where(schema.records.c.at_us >= cutoff_us)).scalar()
        last = select(schema.records.c.seq, schema.records.c.hash).order_by(schema.records.c.seq.desc()).limit(1)
        if newer is not None:
            last = last.where(schema.records.c.seq < newer)
        row = connection.execute(last).first()
        if row is None:
            return PruneResult(0, None)
        count = connection.execute(select(func.count()).select_from(schema.records)
                                   .where(schema.records.c.seq <= row.seq)).scalar_one()
        connection.execute(schema.anchors.insert().values(last_seq=row.seq, hash=row.hash, at_us=time.time_ns() // 1000,
                                                          num_pruned=count))
        connection.execute(delete(schema.captures).where(schema.captures.c.seq <= row.seq))
        connection.execute(delete(schema.records).where(schema.records.c.seq <= row.seq))
    return PruneResult(count, row.seq)



class RetentionKeeper:
    """Prunes past the retention period at start, then every ``every_s`` seconds."""

    def __init__(self, audit: AuditLog, retention_days: float, every_s: float = PRUNE_EVERY_S) -> None:
        self.audit, self.retention_days, self.every_s = audit, retention_days, every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="audit-retention", daemon=True)

    def start(self) -> RetentionKeeper:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while True:
            try:
                result = prune(self.audit.engine, self.retention_days)
                if result.num_pruned:
                    log.info("audit retention: pruned %d record(s) older than %g days", result.num_pruned,
                             self.retention_days)
            except Exception:  # the keeper must outlive a failed prune; the next one retries
                log.exception("audit retention: prune failed")
            if self._stop.wait(self.every_s):
                return

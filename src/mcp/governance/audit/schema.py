"""The audit tables (SQLAlchemy Core); the Alembic revisions in ``migrations/`` create them.

``audit_records`` is the chain: each row holds the sha256 of its predecessor and its own.
Triggers refuse UPDATE on it, and DELETE of any record the newest ``audit_anchors`` row does
not cover (``prune`` writes the anchor first, then deletes the records before it). Anchors are
append-only. ``audit_head`` is one row: the last record's sequence number and hash, locked by
each append (so several server processes may share a database) and checked by ``verify``
(a deleted tail shows there). Captures and subject keys lie outside the chain: erasing them
leaves every record, and so the chain, intact. ``audit_erasures`` registers each erasure (the
pseudonym and when), so a compliance report can check that no key or capture older than it is left.
``audit_pseudonym_schemes`` says from which record on a subject is a (tenant, user) pair: records
before it keep the legacy pseudonym of the user alone (they are hashed into the chain).
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Integer, LargeBinary, MetaData, String, Table, Text

metadata = MetaData()

records = Table(
    "audit_records", metadata,
    Column("seq", BigInteger, primary_key=True, autoincrement=False),
    Column("at_us", BigInteger, nullable=False, index=True),  # wall clock, microseconds since the epoch
    Column("request_id", String(100), nullable=False),
    Column("trace_id", String(32)),
    Column("tenant", String(200), nullable=False),
    Column("subject", String(64), index=True),  # pseudonymous user id (keyed HMAC)
    Column("model", String(200)),
    Column("model_version", String(100)),
    Column("route", String(200), nullable=False),
    Column("decisions", Text, nullable=False),  # canonical JSON list
    Column("prompt_sha256", String(64), nullable=False),
    Column("output_sha256", String(64)),
    Column("prompt_tokens", Integer, nullable=False),
    Column("completion_tokens", Integer, nullable=False),
    Column("latency_us", BigInteger, nullable=False),
    Column("status", String(100), nullable=False),
    Column("prev_hash", String(64), nullable=False),
    Column("hash", String(64), nullable=False, unique=True),
    Column("request_metadata", Text),  # audit0004: the client's metadata tags, canonical JSON (None: none sent)
)

head = Table(
    "audit_head", metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("seq", BigInteger, nullable=False),
    Column("hash", String(64), nullable=False),
)

anchors = Table(
    "audit_anchors", metadata,
    Column("id", Integer, primary_key=True),
    Column("last_seq", BigInteger, nullable=False),  # the newest record pruned
    Column("hash", String(64), nullable=False),  # its hash: the first kept record's prev_hash
    Column("at_us", BigInteger, nullable=False),
    Column("num_pruned", BigInteger, nullable=False),
)

subject_keys = Table(
    "audit_subject_keys", metadata,
    Column("subject", String(64), primary_key=True),
    Column("wrapped_key", LargeBinary, nullable=False),  # AES-GCM under the key file's wrapping key
    Column("created_us", BigInteger, nullable=False),
)

captures = Table(
    "audit_captures", metadata,
    Column("seq", BigInteger, primary_key=True, autoincrement=False),  # the record's
    Column("subject", String(64), nullable=False, index=True),
    Column("nonce", LargeBinary, nullable=False),
    Column("ciphertext", LargeBinary, nullable=False),  # JSON {"prompt", "output"}, AAD = the record's hash
)

erasures = Table(  # the register of erasures (audit0002): what `audit erase` did, append-only
    "audit_erasures", metadata,
    Column("id", Integer, primary_key=True),
    Column("subject", String(64), nullable=False, index=True),
    Column("at_us", BigInteger, nullable=False),
    Column("key_destroyed", Integer, nullable=False),  # 1: a key was deleted, 0: none was kept
    Column("num_captures", BigInteger, nullable=False),
    # audit0003: set when only this tenant's captures of a legacy (user-only) pseudonym were erased
    Column("tenant", String(200)),
)

pseudonym_schemes = Table(  # audit0003: from which record on subjects are (tenant, user); append-only
    "audit_pseudonym_schemes", metadata,
    Column("id", Integer, primary_key=True),
    Column("scheme", String(32), nullable=False),  # "tenant+user"
    Column("first_seq", BigInteger, nullable=False),  # records before it carry the legacy HMAC(user)
    Column("at_us", BigInteger, nullable=False),
)

GENESIS = "0" * 64  # the prev_hash of the first record ever
